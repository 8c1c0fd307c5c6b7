package keyindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// The key index is persisted beside the table's metadata, keyed by what it
// depends on (see Stamp), so a restart need not read every data file:
// <table location>/metadata/pg2iceberg-keyindex.bin. A file for another
// stamp (a commit since, a snapshot written by someone else, a key change)
// or a damaged file is ignored and the index is rebuilt from the table.
const FileName = "/metadata/pg2iceberg-keyindex.bin"

// Version 3 starts with the index's stamp, then stores the integer table's
// runs as runs, then every other key. Files of earlier versions carry only
// a snapshot id, which a key change leaves as it is: they count as stale.
var indexMagic = []byte("PG2IKIX3")

// Stamp encodes what the key index of a table's current state depends
// on. A key change commits a schema and no snapshot, so the snapshot id
// alone would let an index of the old key pass:
//   - the table's UUID (not another table that took this location),
//   - the current snapshot id,
//   - the current schema id,
//   - the key's field IDs, in the order their values are encoded, and
//     whether the key is the whole row (whose rows may repeat).
func Stamp(table [16]byte, snapshot int64, schema int, keyIDs []int, wholeRow bool) []byte {
	b := append([]byte(nil), table[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(snapshot))
	b = binary.AppendUvarint(b, uint64(schema))
	b = binary.AppendUvarint(b, uint64(len(keyIDs)))
	for _, id := range keyIDs {
		b = binary.AppendUvarint(b, uint64(id))
	}
	if wholeRow {
		return append(b, 1)
	}
	return append(b, 0)
}

// Write writes the index file's contents for stamp (its files, runs and
// keys), then their CRC-32. The file is streamed: its size in memory is
// not needed on top of the index.
func (x *Index) Write(f io.Writer, stamp []byte) error {
	crc := crc32.NewIEEE()
	w := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	w.Write(indexMagic)
	w.Write(binary.AppendUvarint(nil, uint64(len(stamp))))
	w.Write(stamp)
	w.Write(binary.AppendUvarint(nil, uint64(len(x.files))))
	for _, path := range x.files {
		w.Write(binary.AppendUvarint(nil, uint64(len(path))))
		w.WriteString(path)
	}
	spans := x.ints.spans()
	inSpans := 0
	w.Write(binary.AppendUvarint(nil, uint64(len(spans))))
	var tmp []byte
	for _, r := range spans {
		l := unpackLoc(r.val)
		tmp = binary.BigEndian.AppendUint64(tmp[:0], r.key)
		tmp = binary.AppendUvarint(tmp, r.n)
		tmp = binary.AppendUvarint(tmp, uint64(l.File))
		tmp = binary.AppendUvarint(tmp, uint64(l.Pos))
		w.Write(tmp)
		inSpans += int(r.n)
	}
	w.Write(binary.AppendUvarint(nil, uint64(x.Len()-inSpans)))
	for k, l := range x.allButRuns() {
		tmp = binary.AppendUvarint(tmp[:0], uint64(len(k)))
		tmp = append(tmp, k...)
		tmp = binary.AppendUvarint(tmp, uint64(l.File))
		tmp = binary.AppendUvarint(tmp, uint64(l.Pos))
		w.Write(tmp)
	}
	if err := w.Flush(); err != nil { // bufio.Writer keeps the first error
		return err
	}
	_, err := f.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// ErrStale: the index file was written for another stamp (or by an
// earlier version); the index is to be rebuilt from the table.
var ErrStale = errors.New("key index file is for another snapshot, schema or key")

// Read reads an index file's contents written for stamp, into an index
// whose rows may repeat or not.
func Read(data []byte, stamp []byte, repeats bool) (*Index, error) {
	if len(data) < len(indexMagic)+4 || !bytes.HasPrefix(data, indexMagic[:len(indexMagic)-1]) {
		return nil, errors.New("not a key index file")
	}
	if !bytes.HasPrefix(data, indexMagic) {
		return nil, ErrStale // an earlier version
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errors.New("key index file is damaged")
	}
	r := bufio.NewReader(bytes.NewReader(body[len(indexMagic):]))
	got, err := readBytes(r)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, stamp) {
		return nil, ErrStale
	}
	nfiles, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, nfiles)
	for i := uint64(0); i < nfiles; i++ {
		s, err := readBytes(r)
		if err != nil {
			return nil, err
		}
		files = append(files, string(s))
	}
	index := New()
	index.SetRepeats(repeats)
	index.files = files
	// Keys of one 8-byte value go in by batches.
	ints := intBatch{t: index.ints}
	twice := errors.New("key index file is damaged: a key twice")
	addInt := func(k uint64, l Loc) error {
		if _, ok := ints.add(k, packLoc(l)); !ok {
			return twice
		}
		return nil
	}
	if err := readRuns(r, index, nfiles, addInt); err != nil {
		return nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		k, err := readBytes(r)
		if err != nil {
			return nil, err
		}
		file, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		pos, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		if file >= nfiles {
			return nil, errors.New("key index file is damaged")
		}
		l := Loc{File: int32(file), Pos: int64(pos)}
		if v, ok := intKey(k); ok {
			if err := addInt(v, l); err != nil {
				return nil, err
			}
			continue
		}
		index.Set(string(k), l)
	}
	if _, ok := ints.flush(); !ok {
		return nil, twice
	}
	return index, nil
}

// readRuns reads the file's runs into index: long ones as runs,
// short ones key by key through addInt.
func readRuns(r *bufio.Reader, index *Index, nfiles uint64, addInt func(uint64, Loc) error) error {
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
		l := Loc{File: int32(file), Pos: int64(pos)}
		if n >= minRun {
			runs = append(runs, intRun{key: key, n: n, val: packLoc(l)})
			continue
		}
		for i := range n {
			if err := addInt(key+i, Loc{File: l.File, Pos: l.Pos + int64(i)}); err != nil {
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
