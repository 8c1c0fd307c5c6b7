package iceberg

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The key index is persisted beside the table's metadata, keyed by the
// snapshot it reflects, so a restart need not read every data file:
// <table location>/metadata/pg2iceberg-keyindex.bin. A file for another
// snapshot (a commit since, or a snapshot written by someone else) or a
// damaged file is ignored and the index is rebuilt from the table.
const indexFileName = "/metadata/pg2iceberg-keyindex.bin"

// Version 2 (written) stores the integer table's runs as runs, then every
// other key; version 1 (still read) stores every key.
var (
	indexMagic   = []byte("PG2IKIX2")
	indexMagicV1 = []byte("PG2IKIX1")
)

func (m *mirror) indexPath() string { return m.tbl.Location() + indexFileName }

// saveIndex writes the index for the current snapshot. Call it only when
// nothing is pending. The file is streamed: its size in memory is not
// needed on top of the index.
func (m *mirror) saveIndex() error {
	snap := m.tbl.CurrentSnapshot()
	if snap == nil || m.pending != nil || len(m.deletes) > 0 {
		return nil
	}
	f, err := m.fs.Create(m.indexPath())
	if err != nil {
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	if err := m.writeIndex(f, snap.SnapshotID); err != nil {
		_ = f.Close()
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	return nil
}

// writeIndex writes the index file's contents, then their CRC-32.
func (m *mirror) writeIndex(f io.Writer, snapshotID int64) error {
	crc := crc32.NewIEEE()
	w := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	w.Write(indexMagic)
	w.Write(binary.BigEndian.AppendUint64(nil, uint64(snapshotID)))
	w.Write(binary.AppendUvarint(nil, uint64(len(m.files))))
	for _, path := range m.files {
		w.Write(binary.AppendUvarint(nil, uint64(len(path))))
		w.WriteString(path)
	}
	spans := m.index.ints.spans()
	inSpans := 0
	w.Write(binary.AppendUvarint(nil, uint64(len(spans))))
	var tmp []byte
	for _, r := range spans {
		l := unpackLoc(r.val)
		tmp = binary.BigEndian.AppendUint64(tmp[:0], r.key)
		tmp = binary.AppendUvarint(tmp, r.n)
		tmp = binary.AppendUvarint(tmp, uint64(l.file))
		tmp = binary.AppendUvarint(tmp, uint64(l.pos))
		w.Write(tmp)
		inSpans += int(r.n)
	}
	w.Write(binary.AppendUvarint(nil, uint64(m.index.len()-inSpans)))
	for k, l := range m.index.allButRuns() {
		tmp = binary.AppendUvarint(tmp[:0], uint64(len(k)))
		tmp = append(tmp, k...)
		tmp = binary.AppendUvarint(tmp, uint64(l.file))
		tmp = binary.AppendUvarint(tmp, uint64(l.pos))
		w.Write(tmp)
	}
	if err := w.Flush(); err != nil { // bufio.Writer keeps the first error
		return err
	}
	_, err := f.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

var errStaleIndex = errors.New("key index file is for another snapshot")

// loadIndex reads a persisted index for the current snapshot.
func (m *mirror) loadIndex() error {
	snap := m.tbl.CurrentSnapshot()
	if snap == nil {
		return errStaleIndex
	}
	f, err := m.fs.Open(m.indexPath())
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	files, index, err := readIndex(data, snap.SnapshotID)
	if err != nil {
		return err
	}
	m.files, m.index = files, index
	return nil
}

// readIndex reads an index file's contents written for snapshotID.
func readIndex(data []byte, snapshotID int64) ([]string, *keyIndex, error) {
	if len(data) < len(indexMagic)+12 {
		return nil, nil, errors.New("not a key index file")
	}
	v1 := bytes.Equal(data[:len(indexMagic)], indexMagicV1)
	if !v1 && !bytes.Equal(data[:len(indexMagic)], indexMagic) {
		return nil, nil, errors.New("not a key index file")
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, nil, errors.New("key index file is damaged")
	}
	r := bufio.NewReader(bytes.NewReader(body[len(indexMagic):]))
	var id [8]byte
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return nil, nil, err
	}
	if int64(binary.BigEndian.Uint64(id[:])) != snapshotID {
		return nil, nil, errStaleIndex
	}
	nfiles, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, nil, err
	}
	files := make([]string, 0, nfiles)
	for i := uint64(0); i < nfiles; i++ {
		s, err := readBytes(r)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, string(s))
	}
	index := newKeyIndex()
	// Keys of one 8-byte value go in by batches (in a version 1 file they
	// form runs again there).
	ints := intBatch{t: index.ints}
	twice := errors.New("key index file is damaged: a key twice")
	addInt := func(k uint64, l loc) error {
		if _, ok := ints.add(k, packLoc(l)); !ok {
			return twice
		}
		return nil
	}
	if !v1 {
		if err := readRuns(r, index, nfiles, addInt); err != nil {
			return nil, nil, err
		}
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, nil, err
	}
	for i := uint64(0); i < n; i++ {
		k, err := readBytes(r)
		if err != nil {
			return nil, nil, err
		}
		file, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, nil, err
		}
		pos, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, nil, err
		}
		if file >= nfiles {
			return nil, nil, errors.New("key index file is damaged")
		}
		l := loc{file: int32(file), pos: int64(pos)}
		if v, ok := intKey(k); ok {
			if err := addInt(v, l); err != nil {
				return nil, nil, err
			}
			continue
		}
		index.set(string(k), l)
	}
	if _, ok := ints.flush(); !ok {
		return nil, nil, twice
	}
	return files, index, nil
}

// readRuns reads a version 2 file's runs into index: long ones as runs,
// short ones key by key through addInt.
func readRuns(r *bufio.Reader, index *keyIndex, nfiles uint64, addInt func(uint64, loc) error) error {
	damaged := errors.New("key index file is damaged")
	nruns, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	var runs []intRun
	for range nruns {
		var kb [8]byte
		if _, err := io.ReadFull(r, kb[:]); err != nil {
			return err
		}
		var f [3]uint64
		for i := range f {
			if f[i], err = binary.ReadUvarint(r); err != nil {
				return err
			}
		}
		key, n, file, pos := binary.BigEndian.Uint64(kb[:]), f[0], f[1], f[2]
		// No run holds key 0, wraps past the last key or position, or
		// names a file not in the list.
		if key == 0 || n == 0 || key+(n-1) < key || file >= nfiles || pos+n > 1<<posBits {
			return damaged
		}
		l := loc{file: int32(file), pos: int64(pos)}
		if n >= minRun {
			runs = append(runs, intRun{key: key, n: n, val: packLoc(l)})
			continue
		}
		for i := range n {
			if err := addInt(key+i, loc{file: l.file, pos: l.pos + int64(i)}); err != nil {
				return err
			}
		}
	}
	if _, ok := index.ints.addRuns(runs); !ok {
		return damaged
	}
	return nil
}

func readBytes(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 1<<24 {
		return nil, errors.New("key index file is damaged")
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}
