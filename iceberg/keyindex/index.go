package keyindex

import (
	"encoding/binary"
	"iter"
)

// Index maps row keys to row locations, with the location packed in 8
// bytes. A key that is one 8-byte part (an integer, float, date, time or
// timestamp column, or 8 bytes of text: 0x08, then the value) is stored as
// that value in an intTable, 16 bytes a slot and one cache line an access
// (or a run of consecutive keys from a copy, a few bytes for the run).
// Other keys of 15 bytes or less (short text keys) live inline in a
// fixed-size array key, about half the memory of a map[string]Loc and no
// allocation per key. Longer keys use a string map.
//
// The three maps partition the key bytes, so every key has exactly one
// place whatever the table's key types.
//
// The index of a mirror kept by the whole row (see RowKeyLen) holds a key
// once per live row of it: more holds the rows beyond the first. Such keys
// are short keys, so only the short map's paths look at more.
//
// The index also names the files its locations point into (AddFile,
// Path): a location's file is an id, its position in that list.
type Index struct {
	ints    *intTable           // the value of a 9-byte key 0x08 v
	short   map[[16]byte]uint64 // key bytes, then the length in the last byte
	long    map[string]uint64
	repeats bool                  // a key may be live more than once
	more    map[[16]byte][]uint64 // nil unless rows may repeat: further rows of a short key
	nmore   int                   // locations in more
	files   []string              // file id → path
	disk    *tier                 // nil unless UseDisk: the keys beyond the memory budget
}

// Loc is where a live row is: a file (its id, see Index.AddFile) and a row
// position in it.
type Loc struct {
	File int32
	Pos  int64
}

// New returns an empty index whose keys do not repeat.
func New() *Index {
	return &Index{ints: newIntTable(), short: make(map[[16]byte]uint64), long: make(map[string]uint64)}
}

// AddFile names the next file id, returned, for path.
func (x *Index) AddFile(path string) int32 {
	x.files = append(x.files, path)
	return int32(len(x.files) - 1)
}

// Path returns the path of file id.
func (x *Index) Path(id int32) string { return x.files[id] }

// Files returns the paths of the files, by id (the index's own slice).
func (x *Index) Files() []string { return x.files }

// SetRepeats says whether a key may be live more than once. In an index
// whose rows may repeat, Set adds a row to its key's rows, and Get and Del
// look at (and remove) the last one added. Rows a key has beyond its first
// stay until they are deleted or the index is cleared.
func (x *Index) SetRepeats(on bool) {
	x.repeats = on
	if on && x.disk != nil { // a whole-row index stays in memory (see UseDisk)
		x.disk.clear()
		x.disk = nil
	}
	switch {
	case on && x.more == nil:
		x.more = make(map[[16]byte][]uint64)
	case !on && x.nmore == 0:
		x.more = nil
	}
}

// Loc packing: 24 bits of file id, 40 bits of position (a trillion rows).
const posBits = 40

func packLoc(l Loc) uint64   { return uint64(l.File)<<posBits | uint64(l.Pos) }
func unpackLoc(v uint64) Loc { return Loc{File: int32(v >> posBits), Pos: int64(v & (1<<posBits - 1))} }

// intKey returns the value of a key that is one 8-byte key part.
func intKey[K string | []byte](k K) (uint64, bool) {
	if len(k) != 9 || k[0] != 8 {
		return 0, false
	}
	var v uint64
	for i := 1; i < 9; i++ {
		v = v<<8 | uint64(k[i])
	}
	return v, true
}

func shortKey[K string | []byte](k K) ([16]byte, bool) {
	var a [16]byte
	if len(k) > 15 {
		return a, false
	}
	copy(a[:], k)
	a[15] = byte(len(k))
	return a, true
}

// Get returns the location of key k.
func (x *Index) Get(k string) (Loc, bool) {
	if x.Spilled() {
		v, found := tierGet(x, k)
		return unpackLoc(v), found
	}
	if v, ok := intKey(k); ok {
		l, found := x.ints.get(v)
		return unpackLoc(l), found
	}
	if a, ok := shortKey(k); ok {
		if x.more != nil {
			if vs := x.more[a]; len(vs) > 0 {
				return unpackLoc(vs[len(vs)-1]), true
			}
		}
		v, found := x.short[a]
		return unpackLoc(v), found
	}
	v, found := x.long[k]
	return unpackLoc(v), found
}

// Set records key k's row at l: the key's only row, or in an index whose
// rows may repeat one more row of it.
func (x *Index) Set(k string, l Loc) {
	if x.Spilled() {
		tierSet(x, k, packLoc(l))
		return
	}
	defer x.maybeSpill()
	if v, ok := intKey(k); ok {
		x.ints.put(v, packLoc(l))
		return
	}
	if a, ok := shortKey(k); ok {
		x.setShort(a, packLoc(l))
		return
	}
	x.long[k] = packLoc(l)
}

func (x *Index) setShort(a [16]byte, v uint64) {
	if x.repeats {
		if _, live := x.short[a]; live {
			x.more[a] = append(x.more[a], v)
			x.nmore++
			return
		}
	}
	x.short[a] = v
}

// Add indexes a key expected to be new, with one map operation. It reports
// false when the key was there already; the key is then at l, its earlier
// location lost, so a caller treats that as an error.
func (x *Index) Add(k []byte, l Loc) bool {
	if x.Spilled() {
		return tierSet(x, k, packLoc(l))
	}
	if x.disk != nil {
		defer x.maybeSpill()
	}
	if v, ok := intKey(k); ok {
		return x.ints.put(v, packLoc(l))
	}
	if a, ok := shortKey(k); ok {
		if x.repeats { // a key seen again is one more row of it
			x.setShort(a, packLoc(l))
			return true
		}
		n := len(x.short)
		x.short[a] = packLoc(l)
		return len(x.short) > n
	}
	n := len(x.long)
	x.long[string(k)] = packLoc(l)
	return len(x.long) > n
}

// Del removes key k (in an index whose rows repeat, its last row).
func (x *Index) Del(k string) { delKey(x, k) }

// AddAll indexes the keys of a copied file, expected to be new, key i at
// row i of file. It returns a key that was there already, if any (ok
// false; as with Add, what happens to the rest is undefined: the caller
// treats it as an error). Keys of one 8-byte value go in by batches,
// which keep consecutive ones as runs (see intTable.putAll).
func (x *Index) AddAll(keys *Keys, file int32) (dup []byte, ok bool) {
	if x.Spilled() {
		for i := range keys.Len() {
			if !x.Add(keys.Key(i), Loc{File: file, Pos: int64(i)}) {
				return keys.Key(i), false
			}
		}
		return nil, true
	}
	defer x.maybeSpill()
	ints := intBatch{t: x.ints}
	intDup := func(e intSlot) []byte { return binary.BigEndian.AppendUint64([]byte{8}, e.key) }
	for i := range keys.Len() {
		k, l := keys.Key(i), packLoc(Loc{File: file, Pos: int64(i)})
		if v, isInt := intKey(k); isInt {
			if e, ok := ints.add(v, l); !ok {
				return intDup(e), false
			}
		} else if !x.Add(k, unpackLoc(l)) {
			return k, false
		}
	}
	if e, ok := ints.flush(); !ok {
		return intDup(e), false
	}
	return nil, true
}

// DelBytes is Del for a key in a byte slice.
func (x *Index) DelBytes(k []byte) { delKey(x, k) }

func delKey[K string | []byte](x *Index, k K) {
	if x.Spilled() {
		tierDel(x, k)
		return
	}
	if v, ok := intKey(k); ok {
		x.ints.del(v)
		return
	}
	if a, ok := shortKey(k); ok {
		if x.more != nil && x.dropMore(a) {
			return
		}
		delete(x.short, a)
		return
	}
	delete(x.long, string(k))
}

// dropMore removes the last further row of a, if it has one.
func (x *Index) dropMore(a [16]byte) bool {
	vs := x.more[a]
	if len(vs) == 0 {
		return false
	}
	if vs = vs[:len(vs)-1]; len(vs) == 0 {
		delete(x.more, a)
	} else {
		x.more[a] = vs
	}
	x.nmore--
	return true
}

// Len returns the number of live rows.
func (x *Index) Len() int {
	if x.Spilled() {
		return x.disk.live
	}
	return x.ints.len() + len(x.short) + len(x.long) + x.nmore
}

// Clear removes every key and every file.
func (x *Index) Clear() {
	x.ints.clear()
	clear(x.short)
	clear(x.long)
	clear(x.more)
	x.nmore = 0
	x.files = x.files[:0]
	if x.disk != nil {
		x.disk.clear()
	}
	if !x.repeats {
		x.more = nil
	}
}

// ReserveInts sizes an empty index for n keys of one 8-byte value, so that
// filling it does not grow the table step by step. An index that holds keys
// is left as it is.
func (x *Index) ReserveInts(n int) {
	if x.disk != nil {
		n = min(n, int(x.disk.budget/24))
	}
	if x.Len() == 0 {
		x.ints.reserve(n)
	}
}

// All yields every key and location of an index not Spilled; the key's bytes are valid only until
// the next iteration.
func (x *Index) All() iter.Seq2[[]byte, Loc] { return x.with(x.ints.all()) }

// allButRuns yields every key and location but those of the integer
// table's runs (see intTable.spans); the key's bytes are valid only until
// the next iteration.
func (x *Index) allButRuns() iter.Seq2[[]byte, Loc] { return x.with(x.ints.allButRuns()) }

// with yields the keys of ints (values of 8-byte keys), then the short
// and the long keys, then the further rows of keys that repeat.
func (x *Index) with(ints iter.Seq2[uint64, uint64]) iter.Seq2[[]byte, Loc] {
	return func(yield func([]byte, Loc) bool) {
		var b [16]byte
		b[0] = 8
		for v, l := range ints {
			binary.BigEndian.PutUint64(b[1:9], v)
			if !yield(b[:9], unpackLoc(l)) {
				return
			}
		}
		for a, v := range x.short {
			b = a
			if !yield(b[:a[15]], unpackLoc(v)) {
				return
			}
		}
		for k, v := range x.long {
			if !yield([]byte(k), unpackLoc(v)) {
				return
			}
		}
		for a, vs := range x.more {
			b = a
			for _, v := range vs {
				if !yield(b[:a[15]], unpackLoc(v)) {
					return
				}
			}
		}
	}
}

// Keys are the keys of a data file's rows in order, in one buffer: no
// allocation and nothing for the garbage collector to scan per key. A
// writer appends a key to Tail and hands the result to Push.
type Keys struct {
	buf  []byte
	ends []uint32 // end of each key in buf
}

// Len returns the number of keys.
func (c *Keys) Len() int { return len(c.ends) }

// Key returns the key of row i, valid until the next Push.
func (c *Keys) Key(i int) []byte {
	from := uint32(0)
	if i > 0 {
		from = c.ends[i-1]
	}
	return c.buf[from:c.ends[i]]
}

// Tail returns the buffer to append the next key to.
func (c *Keys) Tail() []byte { return c.buf }

// Push records the next key: b is Tail with the key appended.
func (c *Keys) Push(b []byte) {
	c.buf = b
	c.ends = append(c.ends, uint32(len(b)))
}

// Size returns the bytes the keys take.
func (c *Keys) Size() int { return len(c.buf) }

// Recycle returns empty Keys that reuse c's buffers; c must not be used
// after.
func (c *Keys) Recycle() Keys { return Keys{buf: c.buf[:0], ends: c.ends[:0]} }
