package keyindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// A run is an immutable file of keys and packed locations sorted by key,
// part of the key index's disk tier (see tier): blocks of about
// runBlockSize bytes, each a sequence of entries (uvarint key length, key,
// 8-byte location) and its CRC-32; then the run's index (each block's
// offset and first key, the fence pointers; the run's last key; its Bloom
// filter), its offset, its CRC-32 and the magic. The index is held in
// memory while the run is open: a lookup reads one block at most, and
// none when the key is outside the run's range or the filter rules it
// out. A location of tombstone's file is a deleted key.
var runMagic = []byte("PG2IRUN1")

const (
	runBlockSize = 2 << 10
	runFooter    = 8 + 4 + 8 // index offset, index CRC-32, magic
)

// errRunDamaged is a run file whose contents do not check out.
var errRunDamaged = errors.New("key index run file is damaged")

// run is an open run file.
type run struct {
	f      *os.File
	name   string   // file name in the tier's directory
	n      int      // entries, tombstones included
	size   int64    // bytes of the file
	offs   []int64  // block i is offs[i]..offs[i+1]; the last offset is the index's
	fences []byte   // the blocks' first keys, back to back
	fends  []uint32 // end of each first key in fences
	last   []byte   // the last key
	filter bloom
}

// memBytes is what an open run holds in memory.
func (r *run) memBytes() int64 {
	return int64(len(r.offs)*8 + len(r.fences) + len(r.fends)*4 + len(r.filter.words)*8 + len(r.last))
}

func (r *run) fence(i int) []byte {
	from := uint32(0)
	if i > 0 {
		from = r.fends[i-1]
	}
	return r.fences[from:r.fends[i]]
}

// runWriter writes a run file: entries in increasing key order.
type runWriter struct {
	f      *os.File
	w      *bufio.Writer
	r      run
	off    int64
	block  []byte
	prev   []byte
	filter bloom
}

// newRunWriter creates the run file path for at most keys entries.
func newRunWriter(path string, keys int) (*runWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create key index run: %w", err)
	}
	return &runWriter{f: f, w: bufio.NewWriterSize(f, 64<<10), filter: newBloom(keys)}, nil
}

// add appends an entry; k must be greater than the previous one.
func (w *runWriter) add(k []byte, v uint64) error {
	if w.r.n > 0 && bytes.Compare(k, w.prev) <= 0 {
		return fmt.Errorf("key index run: keys out of order")
	}
	if len(w.block) > 0 && len(w.block)+len(k)+binary.MaxVarintLen16+8 > runBlockSize {
		w.endBlock()
	}
	if len(w.block) == 0 {
		w.r.offs = append(w.r.offs, w.off)
		w.r.fences = append(w.r.fences, k...)
		w.r.fends = append(w.r.fends, uint32(len(w.r.fences)))
	}
	w.block = binary.AppendUvarint(w.block, uint64(len(k)))
	w.block = append(w.block, k...)
	w.block = binary.BigEndian.AppendUint64(w.block, v)
	w.prev = append(w.prev[:0], k...)
	w.filter.add(keyHash(k))
	w.r.n++
	return nil
}

func (w *runWriter) endBlock() {
	w.block = binary.BigEndian.AppendUint32(w.block, crc32.ChecksumIEEE(w.block))
	w.w.Write(w.block) // bufio.Writer keeps the first error, returned by Flush
	w.off += int64(len(w.block))
	w.block = w.block[:0]
}

// finish writes the run's index and footer and returns the run, open for
// reading; abort removes the file instead. The file is not synced: a run
// matters after a crash only when a manifest names it, and SaveDisk syncs
// the runs it names first.
func (w *runWriter) finish() (*run, error) {
	if len(w.block) > 0 {
		w.endBlock()
	}
	w.r.offs = append(w.r.offs, w.off)
	w.r.last = append([]byte(nil), w.prev...)
	w.r.filter = w.filter
	idx := w.r.appendIndex(nil)
	w.w.Write(idx)
	foot := binary.BigEndian.AppendUint64(nil, uint64(w.off))
	foot = binary.BigEndian.AppendUint32(foot, crc32.ChecksumIEEE(idx))
	w.w.Write(append(foot, runMagic...))
	if err := w.w.Flush(); err != nil {
		return nil, fmt.Errorf("write key index run: %w", err)
	}
	name := w.f.Name()
	if err := w.f.Close(); err != nil {
		return nil, fmt.Errorf("write key index run: %w", err)
	}
	return openRun(name)
}

func (w *runWriter) abort() {
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

func (r *run) appendIndex(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(r.n))
	b = binary.AppendUvarint(b, uint64(len(r.fends)))
	for i := range r.fends {
		b = binary.AppendUvarint(b, uint64(r.offs[i]))
		f := r.fence(i)
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.last)))
	b = append(b, r.last...)
	b = binary.AppendUvarint(b, uint64(r.filter.k))
	b = binary.AppendUvarint(b, uint64(len(r.filter.words)))
	for _, w := range r.filter.words {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	return b
}

// openRun opens a run file and reads its index.
func openRun(path string) (*run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open key index run: %w", err)
	}
	r, err := readRunIndex(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.f, r.name = f, filepath.Base(path)
	return r, nil
}

func readRunIndex(f *os.File) (*run, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < runFooter {
		return nil, errRunDamaged
	}
	foot := make([]byte, runFooter)
	if _, err := f.ReadAt(foot, st.Size()-runFooter); err != nil {
		return nil, err
	}
	at := int64(binary.BigEndian.Uint64(foot))
	if !bytes.Equal(foot[12:], runMagic) || at < 0 || at > st.Size()-runFooter {
		return nil, errRunDamaged
	}
	idx := make([]byte, st.Size()-runFooter-at)
	if _, err := f.ReadAt(idx, at); err != nil {
		return nil, err
	}
	if crc32.ChecksumIEEE(idx) != binary.BigEndian.Uint32(foot[8:]) {
		return nil, errRunDamaged
	}
	r, err := parseRunIndex(idx, at)
	if err != nil {
		return nil, err
	}
	r.size = st.Size()
	return r, nil
}

func parseRunIndex(idx []byte, end int64) (*run, error) {
	d := decoder{b: idx}
	r := &run{n: int(d.uvarint())}
	blocks := int(d.uvarint())
	if blocks > len(idx) {
		return nil, errRunDamaged
	}
	for range blocks {
		r.offs = append(r.offs, int64(d.uvarint()))
		r.fences = append(r.fences, d.bytes()...)
		r.fends = append(r.fends, uint32(len(r.fences)))
	}
	r.offs = append(r.offs, end)
	r.last = append([]byte(nil), d.bytes()...)
	r.filter.k = uint32(d.uvarint())
	words := int(d.uvarint())
	if d.err != nil || words*8 > len(d.b) || words == 0 {
		return nil, errRunDamaged
	}
	r.filter.words = make([]uint64, words)
	for i := range r.filter.words {
		r.filter.words[i] = binary.BigEndian.Uint64(d.b[i*8:])
	}
	return r, nil
}

// decoder reads uvarints and length-prefixed bytes, keeping the first
// error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = errRunDamaged, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = errRunDamaged, nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// readBlock reads and checks block i into buf.
func (r *run) readBlock(i int, buf []byte) ([]byte, error) {
	size := int(r.offs[i+1] - r.offs[i])
	if size < 4 {
		return nil, errRunDamaged
	}
	buf = append(buf[:0], make([]byte, size)...)
	if _, err := r.f.ReadAt(buf, r.offs[i]); err != nil {
		return nil, fmt.Errorf("read key index run %s: %w", r.name, err)
	}
	body := buf[:size-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(buf[size-4:]) {
		return nil, fmt.Errorf("%s: %w", r.name, errRunDamaged)
	}
	return body, nil
}

// get returns the packed location of k in the run (maybe a tombstone's);
// h is keyHash(k). buf is scratch space, returned for reuse.
func (r *run) get(k []byte, h uint64, buf []byte) (v uint64, found bool, _ []byte, err error) {
	if r.n == 0 || bytes.Compare(k, r.fence(0)) < 0 || bytes.Compare(k, r.last) > 0 || !r.filter.mayHold(h) {
		return 0, false, buf, nil
	}
	i := sort.Search(len(r.fends), func(i int) bool { return bytes.Compare(r.fence(i), k) > 0 }) - 1
	body, err := r.readBlock(i, buf)
	if err != nil {
		return 0, false, buf, err
	}
	for d := (decoder{b: body}); len(d.b) > 0; {
		e := d.bytes()
		if d.err != nil || len(d.b) < 8 {
			return 0, false, body, fmt.Errorf("%s: %w", r.name, errRunDamaged)
		}
		v := binary.BigEndian.Uint64(d.b)
		d.b = d.b[8:]
		switch c := bytes.Compare(e, k); {
		case c == 0:
			return v, true, body, nil
		case c > 0:
			return 0, false, body, nil
		}
	}
	return 0, false, body, nil
}

// runCursor reads a run's entries in order, a block at a time.
type runCursor struct {
	r     *run
	rd    *bufio.Reader
	block int
	d     decoder
	buf   []byte
	k     []byte
	v     uint64
	err   error
}

func (c *runCursor) key() []byte   { return c.k }
func (c *runCursor) val() uint64   { return c.v }
func (c *runCursor) failed() error { return c.err }

func (r *run) cursor() *runCursor {
	return &runCursor{r: r, rd: bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.offs[len(r.offs)-1]), 64<<10)}
}

// next moves to the next entry; false at the end or on an error (err).
func (c *runCursor) next() bool {
	for len(c.d.b) == 0 {
		if c.err != nil || c.block >= len(c.r.fends) {
			return false
		}
		size := int(c.r.offs[c.block+1] - c.r.offs[c.block])
		c.block++
		if size < 4 {
			c.err = fmt.Errorf("%s: %w", c.r.name, errRunDamaged)
			return false
		}
		c.buf = append(c.buf[:0], make([]byte, size)...)
		if _, err := io.ReadFull(c.rd, c.buf); err != nil {
			c.err = fmt.Errorf("read key index run %s: %w", c.r.name, err)
			return false
		}
		body := c.buf[:size-4]
		if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(c.buf[size-4:]) {
			c.err = fmt.Errorf("%s: %w", c.r.name, errRunDamaged)
			return false
		}
		c.d = decoder{b: body}
	}
	c.k = c.d.bytes()
	if c.d.err != nil || len(c.d.b) < 8 {
		c.err = fmt.Errorf("%s: %w", c.r.name, errRunDamaged)
		return false
	}
	c.v = binary.BigEndian.Uint64(c.d.b)
	c.d.b = c.d.b[8:]
	return true
}
