package keyindex

import "math/bits"

// bloom is a run's Bloom filter: whether a key may be in the run, so that
// a lookup reads a block of only the runs that may hold the key. Its hash
// is fixed (not seeded per process) because the filter is saved with the
// run.
type bloom struct {
	words []uint64
	k     uint32 // probes per key
}

// bloomBitsPerKey: 8 bits and 5 probes a key, about 2% false positives.
const (
	bloomBitsPerKey = 8
	bloomProbes     = 5
)

func newBloom(keys int) bloom {
	n := max(1, (keys*bloomBitsPerKey+63)/64)
	return bloom{words: make([]uint64, n), k: bloomProbes}
}

// keyHash is FNV-1a over the key, then MurmurHash3's finaliser.
func keyHash(k []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range k {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

func (b bloom) add(h uint64) {
	n := uint64(len(b.words)) * 64
	delta := bits.RotateLeft64(h, 31) | 1
	for range b.k {
		i := h % n
		b.words[i/64] |= 1 << (i % 64)
		h += delta
	}
}

func (b bloom) mayHold(h uint64) bool {
	n := uint64(len(b.words)) * 64
	delta := bits.RotateLeft64(h, 31) | 1
	for range b.k {
		i := h % n
		if b.words[i/64]&(1<<(i%64)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
