package keyindex

import (
	"iter"
	"math/rand/v2"
	"slices"
	"sort"
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
//
// A run of consecutive keys with consecutive values, as a copy of a table
// with a serial key usually delivers (key k at row r of a file, k+1 at r+1),
// is kept as one intRun instead of a slot per key: a copy of millions of
// rows then costs a few runs, not hundreds of megabytes of slots and a
// cache miss per key. The slots override the runs: a key of a run that is
// set again gets a slot, and a deleted one a slot holding intTomb.
type intTable struct {
	seed    uint64
	shards  [intShards]intShard
	n       int // keys in the shards, tombstones included
	hasZero bool
	zero    uint64 // the value of key 0
	touched uint64 // a sum of slots putAll read ahead, so the reads stay

	runs    []intRun // sorted by key, disjoint, never holding key 0
	runKeys int      // keys the runs cover
	tombs   int      // slots holding intTomb
	inRuns  int      // slots whose key a run covers (tombstones included)
	hint    int      // keys reserve was told of, applied once slots are needed
}

// intRun maps keys key..key+n-1 to values val..val+n-1.
type intRun struct{ key, n, val uint64 }

const (
	// minRun is the shortest stretch of consecutive keys putAll keeps as a
	// run; shorter ones go in slots, so lookups in runs stay a short
	// binary search.
	minRun = 64
	// intTomb in a slot marks a key of a run as deleted. No location packs
	// to it (file 2^24-1, position 2^40-1).
	intTomb = ^uint64(0)
)

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
	n := t.runKeys + t.n - t.tombs - t.inRuns
	if t.hasZero {
		n++
	}
	return n
}

func (t *intTable) get(k uint64) (uint64, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	if t.n > 0 {
		if v, ok := t.slot(k); ok {
			if v == intTomb {
				return 0, false
			}
			return v, true
		}
	}
	if r := t.run(k); r != nil {
		return r.val + (k - r.key), true
	}
	return 0, false
}

// run returns the run holding k, or nil.
func (t *intTable) run(k uint64) *intRun {
	i := sort.Search(len(t.runs), func(i int) bool { return t.runs[i].key > k }) - 1
	if i >= 0 && k-t.runs[i].key < t.runs[i].n {
		return &t.runs[i]
	}
	return nil
}

// slot returns the value in k's slot, a tombstone included.
func (t *intTable) slot(k uint64) (uint64, bool) {
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
			old := s.slots[i].val
			s.slots[i].val = v
			if old == intTomb {
				t.tombs--
				return true
			}
			return false
		}
	}
	s.slots[i] = intSlot{k, v}
	s.n++
	t.n++
	if len(t.runs) > 0 && t.run(k) != nil {
		t.inRuns++
		return false
	}
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
	var runs []intRun
	var singles []intSlot // made at the first key not in a run
	for i := 0; i < len(kv); {
		j := i + 1
		if kv[i].key != 0 {
			for j < len(kv) && kv[j].key == kv[j-1].key+1 && kv[j].val == kv[j-1].val+1 && kv[j].key != 0 {
				j++
			}
		}
		if j-i >= minRun {
			runs = append(runs, intRun{key: kv[i].key, n: uint64(j - i), val: kv[i].val})
		} else {
			if singles == nil {
				singles = make([]intSlot, 0, len(kv)-i)
			}
			singles = append(singles, kv[i:j]...)
		}
		i = j
	}
	if k, ok := t.addRuns(runs); !ok {
		return k, false
	}
	if t.hint > 0 && 2*len(singles) > len(kv) {
		t.applyHint()
	}
	kv = singles
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

// intBatch collects keys expected to be new for putAll, which keeps the
// consecutive ones as runs, and puts them in a batch at a time.
type intBatch struct {
	t  *intTable
	kv []intSlot
}

const intBatchKeys = 1 << 16

// add adds key k at value v. When that fills the batch it is put in; a key
// that was there already comes back with its value in the batch (ok
// false), and the table is then as putAll leaves it.
func (b *intBatch) add(k, v uint64) (dup intSlot, ok bool) {
	b.kv = append(b.kv, intSlot{k, v})
	if len(b.kv) < intBatchKeys {
		return intSlot{}, true
	}
	return b.flush()
}

// flush puts the batch in, as add does when it is full.
func (b *intBatch) flush() (dup intSlot, ok bool) {
	k, ok := b.t.putAll(b.kv)
	if !ok {
		dup = b.kv[slices.IndexFunc(b.kv, func(e intSlot) bool { return e.key == k })]
	}
	b.kv = b.kv[:0]
	return dup, ok
}

// addRuns adds runs of keys expected to be new, and returns a key that
// was there already, if any.
func (t *intTable) addRuns(runs []intRun) (dup uint64, ok bool) {
	if len(runs) == 0 {
		return 0, true
	}
	if t.n > 0 {
		for _, r := range runs {
			for i := range r.n {
				if v, ok := t.slot(r.key + i); ok && v != intTomb {
					return r.key + i, false
				}
			}
		}
	}
	all := make([]intRun, 0, len(t.runs)+len(runs))
	all = append(append(all, t.runs...), runs...)
	slices.SortFunc(all, func(a, b intRun) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	out := all[:0]
	for _, r := range all {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if r.key-p.key < p.n {
				return r.key, false
			}
			if p.key+p.n == r.key && p.val+p.n == r.val {
				p.n += r.n
				continue
			}
		}
		out = append(out, r)
	}
	t.runs = out
	for _, r := range runs {
		t.runKeys += int(r.n)
	}
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
	if len(t.runs) > 0 && t.run(k) != nil {
		// A run's key stays deleted only by a tombstone over it.
		if v, ok := t.slot(k); !ok || v != intTomb {
			t.putHashed(t.hash(k), k, intTomb)
			t.tombs++
		}
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

// reserve tells an empty table to expect n keys. The slots are sized for
// them when putAll is given keys that are not runs; keys in runs take no
// slots.
func (t *intTable) reserve(n int) {
	if t.len() > 0 || n <= 0 {
		return
	}
	t.hint = n
}

// applyHint sizes the shards for the keys reserve was told of.
func (t *intTable) applyHint() {
	per := t.hint/intShards + 1
	t.hint = 0
	size := 8
	for size*3 < per*4 {
		size *= 2
	}
	for i := range t.shards {
		if s := &t.shards[i]; len(s.slots) < size {
			t.grow(s, size)
		}
	}
}

// clear removes every key, keeping the shards' sizes.
func (t *intTable) clear() {
	for i := range t.shards {
		clear(t.shards[i].slots)
		t.shards[i].n = 0
	}
	t.n, t.zero, t.hasZero = 0, 0, false
	t.runs, t.runKeys, t.tombs, t.inRuns, t.hint = t.runs[:0], 0, 0, 0, 0
}

// clearSlots removes every key but those of the runs (see tier.spill:
// the slots are then on disk, above the runs).
func (t *intTable) clearSlots() {
	for i := range t.shards {
		clear(t.shards[i].slots)
		t.shards[i].n = 0
	}
	t.n, t.zero, t.hasZero, t.tombs, t.inRuns = 0, 0, false, 0, 0
}

// spans returns the runs' keys that no slot overrides, as runs (of any
// length).
func (t *intTable) spans() []intRun {
	var out []intRun
	for _, r := range t.runs {
		from := uint64(0)
		if t.n > 0 {
			for i := range r.n {
				if _, ok := t.slot(r.key + i); ok {
					if i > from {
						out = append(out, intRun{key: r.key + from, n: i - from, val: r.val + from})
					}
					from = i + 1
				}
			}
		}
		if r.n > from {
			out = append(out, intRun{key: r.key + from, n: r.n - from, val: r.val + from})
		}
	}
	return out
}

// allButRuns yields key 0 and every key in a slot (tombstones excepted).
func (t *intTable) allButRuns() iter.Seq2[uint64, uint64] {
	return func(yield func(uint64, uint64) bool) {
		if t.hasZero && !yield(0, t.zero) {
			return
		}
		for i := range t.shards {
			for _, e := range t.shards[i].slots {
				if e.key != 0 && e.val != intTomb && !yield(e.key, e.val) {
					return
				}
			}
		}
	}
}

// all yields every key and value: the runs' keys in order, then key 0 and
// the slots'.
func (t *intTable) all() iter.Seq2[uint64, uint64] {
	return func(yield func(uint64, uint64) bool) {
		for _, r := range t.spans() {
			for i := range r.n {
				if !yield(r.key+i, r.val+i) {
					return
				}
			}
		}
		for k, v := range t.allButRuns() {
			if !yield(k, v) {
				return
			}
		}
	}
}
