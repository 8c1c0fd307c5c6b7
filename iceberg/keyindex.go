package iceberg

import (
	"encoding/binary"
	"iter"
)

// keyIndex maps row keys to row locations, with the location packed in 8
// bytes. A key that is one 8-byte part (an integer, float, date, time or
// timestamp column, or 8 bytes of text: 0x08, then the value) is stored as
// that value in an intTable, 16 bytes a slot and one cache line an access
// (or a run of consecutive keys from a copy, a few bytes for the run).
// Other keys of 15 bytes or less (short text keys) live inline in a
// fixed-size array key, about half the memory of a map[string]loc and no
// allocation per key. Longer keys use a string map.
//
// The three maps partition the key bytes, so every key has exactly one
// place whatever the table's key types.
//
// The index of a mirror kept by the whole row (see rowKeyLen) holds a key
// once per live row of it: more holds the rows beyond the first. Such keys
// are short keys, so only the short map's paths look at more.
type keyIndex struct {
	ints    *intTable           // the value of a 9-byte key 0x08 v
	short   map[[16]byte]uint64 // key bytes, then the length in the last byte
	long    map[string]uint64
	repeats bool                  // a key may be live more than once
	more    map[[16]byte][]uint64 // nil unless rows may repeat: further rows of a short key
	nmore   int                   // locations in more
}

func newKeyIndex() *keyIndex {
	return &keyIndex{ints: newIntTable(), short: make(map[[16]byte]uint64), long: make(map[string]uint64)}
}

// setRepeats says whether a key may be live more than once. In an index
// whose rows may repeat, set adds a row to its key's rows, and get and del
// look at (and remove) the last one added. Rows a key has beyond its first
// stay until they are deleted or the index is cleared.
func (x *keyIndex) setRepeats(on bool) {
	x.repeats = on
	switch {
	case on && x.more == nil:
		x.more = make(map[[16]byte][]uint64)
	case !on && x.nmore == 0:
		x.more = nil
	}
}

// loc packing: 24 bits of file id, 40 bits of position (a trillion rows).
const posBits = 40

func packLoc(l loc) uint64   { return uint64(l.file)<<posBits | uint64(l.pos) }
func unpackLoc(v uint64) loc { return loc{file: int32(v >> posBits), pos: int64(v & (1<<posBits - 1))} }

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

func (x *keyIndex) get(k string) (loc, bool) {
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

// set records key k's row at l: the key's only row, or in an index whose
// rows may repeat one more row of it.
func (x *keyIndex) set(k string, l loc) {
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

func (x *keyIndex) setShort(a [16]byte, v uint64) {
	if x.repeats {
		if _, live := x.short[a]; live {
			x.more[a] = append(x.more[a], v)
			x.nmore++
			return
		}
	}
	x.short[a] = v
}

// add indexes a key expected to be new, with one map operation. It reports
// false when the key was there already; the key is then at l, its earlier
// location lost, so a caller treats that as an error.
func (x *keyIndex) add(k []byte, l loc) bool {
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

func (x *keyIndex) del(k string) { delKey(x, k) }

// addAll indexes the keys of a copied file, expected to be new, key i at
// row i of file. It returns a key that was there already, if any (ok
// false; as with add, what happens to the rest is undefined: the caller
// treats it as an error). Keys of one 8-byte value go in by batches,
// which keep consecutive ones as runs (see intTable.putAll).
func (x *keyIndex) addAll(keys *copiedKeys, file int32) (dup []byte, ok bool) {
	ints := intBatch{t: x.ints}
	intDup := func(e intSlot) []byte { return binary.BigEndian.AppendUint64([]byte{8}, e.key) }
	for i := range keys.len() {
		k, l := keys.key(i), packLoc(loc{file: file, pos: int64(i)})
		if v, isInt := intKey(k); isInt {
			if e, ok := ints.add(v, l); !ok {
				return intDup(e), false
			}
		} else if !x.add(k, unpackLoc(l)) {
			return k, false
		}
	}
	if e, ok := ints.flush(); !ok {
		return intDup(e), false
	}
	return nil, true
}

// delBytes is del for a key in a byte slice.
func (x *keyIndex) delBytes(k []byte) { delKey(x, k) }

func delKey[K string | []byte](x *keyIndex, k K) {
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
func (x *keyIndex) dropMore(a [16]byte) bool {
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

func (x *keyIndex) len() int { return x.ints.len() + len(x.short) + len(x.long) + x.nmore }

func (x *keyIndex) clear() {
	x.ints.clear()
	clear(x.short)
	clear(x.long)
	clear(x.more)
	x.nmore = 0
	if !x.repeats {
		x.more = nil
	}
}

// reserveInts sizes an empty index for n keys of one 8-byte value, so that
// filling it does not grow the table step by step. An index that holds keys
// is left as it is.
func (x *keyIndex) reserveInts(n int) {
	if x.len() == 0 {
		x.ints.reserve(n)
	}
}

// all yields every key and location; the key's bytes are valid only until
// the next iteration.
func (x *keyIndex) all() iter.Seq2[[]byte, loc] { return x.with(x.ints.all()) }

// allButRuns yields every key and location but those of the integer
// table's runs (see intTable.spans); the key's bytes are valid only until
// the next iteration.
func (x *keyIndex) allButRuns() iter.Seq2[[]byte, loc] { return x.with(x.ints.allButRuns()) }

// with yields the keys of ints (values of 8-byte keys), then the short
// and the long keys, then the further rows of keys that repeat.
func (x *keyIndex) with(ints iter.Seq2[uint64, uint64]) iter.Seq2[[]byte, loc] {
	return func(yield func([]byte, loc) bool) {
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
