package iceberg

import (
	"iter"
	"math/rand/v2"
)

// intTable is a hash map from uint64 to uint64: the key index's map for
// keys that are one 8-byte value. It is open addressing with linear
// probing, the key and its value side by side, so a lookup or an insert
// usually touches one cache line; Go's map touches two or three (directory,
// control word, slot), and the copy's inserts into an index of millions of
// keys cost several times as much with it.
//
// The table is split into 256 shards by the top 8 bits of the hash, each
// growing on its own, so a growing index never holds an old and a new copy
// of all its slots at once. Key 0 marks an empty slot; the key 0 itself is
// kept aside. The hash is seeded per table, so keys cannot be chosen to
// collide.
type intTable struct {
	seed    uint64
	shards  [intShards]intShard
	n       int // keys in the shards
	hasZero bool
	zero    uint64 // the value of key 0
	touched uint64 // a sum of slots putAll read ahead, so the reads stay
}

const (
	intShardBits = 8
	intShards    = 1 << intShardBits
)

type intShard struct {
	slots []intSlot // a power of two, nil until the first key
	n     int
}

type intSlot struct{ key, val uint64 }

func newIntTable() *intTable { return &intTable{seed: rand.Uint64()} }

// hash mixes the key (the finaliser of MurmurHash3: every bit of the key
// moves every bit of the hash).
func (t *intTable) hash(k uint64) uint64 {
	k ^= t.seed
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

func (t *intTable) shard(h uint64) *intShard { return &t.shards[h>>(64-intShardBits)] }

func (s *intShard) mask() uint64 { return uint64(len(s.slots) - 1) }

func (t *intTable) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

func (t *intTable) get(k uint64) (uint64, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	h := t.hash(k)
	s := t.shard(h)
	if s.slots == nil {
		return 0, false
	}
	mask := s.mask()
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i].key {
		case k:
			return s.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// put sets k to v and reports whether k is new.
func (t *intTable) put(k, v uint64) bool { return t.putHashed(t.hash(k), k, v) }

// putHashed is put of a key whose hash is h.
func (t *intTable) putHashed(h, k, v uint64) bool {
	if k == 0 {
		added := !t.hasZero
		t.zero, t.hasZero = v, true
		return added
	}
	s := t.shard(h)
	if (s.n+1)*4 > len(s.slots)*3 { // at most 3/4 full
		t.grow(s, max(2*len(s.slots), 8))
	}
	mask := s.mask()
	i := h & mask
	for ; s.slots[i].key != 0; i = (i + 1) & mask {
		if s.slots[i].key == k {
			s.slots[i].val = v
			return false
		}
	}
	s.slots[i] = intSlot{k, v}
	s.n++
	t.n++
	return true
}

// putAll sets every pair, as put does, and returns the first key that was
// there already (ok false: its value is overwritten; keys of later shards
// are not set).
//
// An index of millions of keys is far larger than the CPU's own caches and
// TLB, so an insert in key order mostly waits for its slot's cache line
// and page walk. putAll sorts the pairs by shard first (one counting
// pass), so the inserts of a shard touch only its slots, which the caches
// hold; within a shard it reads the home slots of a group of keys ahead,
// loads that do not depend on each other and whose misses overlap.
func (t *intTable) putAll(kv []intSlot) (dup uint64, ok bool) {
	var start [intShards + 1]int
	for _, e := range kv {
		start[t.hash(e.key)>>(64-intShardBits)+1]++
	}
	for i := range intShards {
		start[i+1] += start[i]
	}
	sorted, at := make([]intSlot, len(kv)), start
	for _, e := range kv {
		s := t.hash(e.key) >> (64 - intShardBits)
		sorted[at[s]] = e
		at[s]++
	}
	const group = 16
	var hs [group]uint64
	var touched uint64
	for i := range intShards {
		part := sorted[start[i]:start[i+1]]
		if len(part) == 0 {
			continue
		}
		if s := &t.shards[i]; (s.n+len(part))*4 > len(s.slots)*3 {
			size := max(len(s.slots), 8)
			for (s.n+len(part))*4 > size*3 {
				size *= 2
			}
			t.grow(s, size)
		}
		for len(part) > 0 {
			n := min(len(part), group)
			s := &t.shards[i]
			mask := s.mask()
			for j := range n {
				h := t.hash(part[j].key)
				hs[j] = h
				touched += s.slots[h&mask].key
			}
			for j := range n {
				if !t.putHashed(hs[j], part[j].key, part[j].val) {
					return part[j].key, false
				}
			}
			part = part[n:]
		}
	}
	t.touched += touched // keeps the reads
	return 0, true
}

// grow moves a shard's keys into size slots.
func (t *intTable) grow(s *intShard, size int) {
	old := s.slots
	s.slots = make([]intSlot, size)
	mask := s.mask()
	for _, e := range old {
		if e.key == 0 {
			continue
		}
		i := t.hash(e.key) & mask
		for s.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
	}
}

// del removes k. The keys after it in its run move back, each as far as
// its own home slot allows, so no deleted marker is left and lookups stay
// as short as if k had never been there.
func (t *intTable) del(k uint64) {
	if k == 0 {
		t.zero, t.hasZero = 0, false
		return
	}
	h := t.hash(k)
	s := t.shard(h)
	if s.slots == nil {
		return
	}
	mask := s.mask()
	i := h & mask
	for ; s.slots[i].key != k; i = (i + 1) & mask {
		if s.slots[i].key == 0 {
			return
		}
	}
	for j := (i + 1) & mask; s.slots[j].key != 0; j = (j + 1) & mask {
		home := t.hash(s.slots[j].key) & mask
		// The key at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if i < j && (home <= i || home > j) || i > j && home <= i && home > j {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = intSlot{}
	s.n--
	t.n--
}

// reserve sizes an empty table for n keys.
func (t *intTable) reserve(n int) {
	if t.len() > 0 || n <= 0 {
		return
	}
	per := n/intShards + 1
	size := 8
	for size*3 < per*4 {
		size *= 2
	}
	for i := range t.shards {
		t.shards[i].slots = make([]intSlot, size)
	}
}

// clear removes every key, keeping the shards' sizes.
func (t *intTable) clear() {
	for i := range t.shards {
		clear(t.shards[i].slots)
		t.shards[i].n = 0
	}
	t.n, t.zero, t.hasZero = 0, 0, false
}

// all yields every key and value.
func (t *intTable) all() iter.Seq2[uint64, uint64] {
	return func(yield func(uint64, uint64) bool) {
		if t.hasZero && !yield(0, t.zero) {
			return
		}
		for i := range t.shards {
			for _, e := range t.shards[i].slots {
				if e.key != 0 && !yield(e.key, e.val) {
					return
				}
			}
		}
	}
}
