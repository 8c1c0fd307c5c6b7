package iceberg

import "iter"

// keyIndex maps row keys to row locations. Most keys (integer and short
// text keys) are 15 bytes or less once encoded: those live inline in a
// fixed-size array key with the location packed in 8 bytes, about half the
// memory of a map[string]loc and no allocation per key. Longer keys use a
// string map.
type keyIndex struct {
	short map[[16]byte]uint64 // key bytes, then the length in the last byte
	long  map[string]uint64
}

func newKeyIndex() *keyIndex {
	return &keyIndex{short: make(map[[16]byte]uint64), long: make(map[string]uint64)}
}

// loc packing: 24 bits of file id, 40 bits of position (a trillion rows).
const posBits = 40

func packLoc(l loc) uint64   { return uint64(l.file)<<posBits | uint64(l.pos) }
func unpackLoc(v uint64) loc { return loc{file: int32(v >> posBits), pos: int64(v & (1<<posBits - 1))} }

func shortKey(k string) ([16]byte, bool) {
	var a [16]byte
	if len(k) > 15 {
		return a, false
	}
	copy(a[:], k)
	a[15] = byte(len(k))
	return a, true
}

func (x *keyIndex) get(k string) (loc, bool) {
	if a, ok := shortKey(k); ok {
		v, found := x.short[a]
		return unpackLoc(v), found
	}
	v, found := x.long[k]
	return unpackLoc(v), found
}

func (x *keyIndex) set(k string, l loc) {
	if a, ok := shortKey(k); ok {
		x.short[a] = packLoc(l)
		return
	}
	x.long[k] = packLoc(l)
}

func (x *keyIndex) del(k string) {
	if a, ok := shortKey(k); ok {
		delete(x.short, a)
		return
	}
	delete(x.long, k)
}

func (x *keyIndex) len() int { return len(x.short) + len(x.long) }

func (x *keyIndex) clear() {
	clear(x.short)
	clear(x.long)
}

// all yields every key and location.
func (x *keyIndex) all() iter.Seq2[string, loc] {
	return func(yield func(string, loc) bool) {
		for a, v := range x.short {
			if !yield(string(a[:a[15]]), unpackLoc(v)) {
				return
			}
		}
		for k, v := range x.long {
			if !yield(k, unpackLoc(v)) {
				return
			}
		}
	}
}
