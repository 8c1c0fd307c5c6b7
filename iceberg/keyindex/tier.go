package keyindex

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// tier is an index's disk tier (see Index.UseDisk): the keys that do not
// fit its memory budget, in immutable sorted runs in a local directory,
// newest last. The index's maps are then the memtable above the runs: a
// key's newest state is in the maps, else in the newest run holding it,
// else in the integer table's runs of consecutive keys (which are only
// made while the tier has no run, so they are older than every run). A
// deletion is a tombstone (a location of tombstone's file) until a merge
// into the oldest run drops it.
//
// When the maps outgrow the budget (less what the open runs hold in
// memory: fences and Bloom filters), they are written out as a new run
// (spill) and emptied. A run is then merged with the one before it while
// that one is at most twice its size, so a run's keys are rewritten about
// log2(keys/spill) times and the runs stay few. Spills and merges happen
// on the goroutine that changes the index, between its calls.
type tier struct {
	dir    string
	budget int64
	runs   []*run // oldest first
	seq    int    // number of the next run file
	live   int    // live rows of the index, kept once runs is not empty
	buf    []byte // block scratch for lookups
	err    error  // the first disk error; Index.Err reports it

	// The last key looked up on disk and what was found, so that a
	// lookup followed by a change of the key (the mirror's Get, then Del
	// or Set) reads the disk once. A spill or merge forgets it.
	lastKey   []byte
	lastVal   uint64
	lastFound bool
	lastOK    bool

	spills, merges int // for tests and logs
}

const (
	runSuffix    = ".run"
	manifestName = "MANIFEST"
	tombPacked   = uint64(tombstone) << posBits // packLoc(Loc{File: tombstone})
)

func isTomb(v uint64) bool { return v == intTomb || v>>posBits == tombstone }

// UseDisk gives the index a disk tier in dir (created if need be, and
// emptied: what is there is from an index that is not used), keeping about
// budget bytes of keys in memory. An index whose rows may repeat (a
// whole-row key) stays in memory.
func (x *Index) UseDisk(dir string, budget int64) error {
	if x.repeats {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("key index directory: %w", err)
	}
	t := &tier{dir: dir, budget: budget}
	if err := t.removeExcept(nil); err != nil {
		return err
	}
	x.disk = t
	return nil
}

// HasDisk says whether the index has a disk tier.
func (x *Index) HasDisk() bool { return x.disk != nil }

// Spilled says whether part of the index is on disk.
func (x *Index) Spilled() bool { return x.disk != nil && len(x.disk.runs) > 0 }

// DiskStats is what an index's disk tier holds and has done.
type DiskStats struct {
	Runs           int   // sorted runs in the directory
	Bytes          int64 // their bytes
	Spills, Merges int   // since the tier was opened
}

// DiskUse returns the disk tier's figures (zeros without one).
func (x *Index) DiskUse() DiskStats {
	if x.disk == nil {
		return DiskStats{}
	}
	st := DiskStats{Runs: len(x.disk.runs), Spills: x.disk.spills, Merges: x.disk.merges}
	for _, r := range x.disk.runs {
		st.Bytes += r.size
	}
	return st
}

// Err returns the first error of the disk tier: a lookup that could not
// read a run answered "not found", so the changes made since are not to
// be committed (the caller rebuilds the index).
func (x *Index) Err() error {
	if x.disk == nil {
		return nil
	}
	return x.disk.err
}

// removeExcept removes the files of dir that are not keep's.
func (t *tier) removeExcept(keep map[string]bool) error {
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return fmt.Errorf("key index directory: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if n, ok := runNumber(name); ok {
			t.seq = max(t.seq, n+1)
		}
		if !keep[name] && (strings.HasSuffix(name, runSuffix) || strings.HasSuffix(name, ".tmp") || name == manifestName) {
			if err := os.Remove(filepath.Join(t.dir, name)); err != nil {
				return fmt.Errorf("key index directory: %w", err)
			}
		}
	}
	return nil
}

func runNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSuffix(name, runSuffix))
	return n, err == nil && strings.HasSuffix(name, runSuffix)
}

// memBytes estimates what the maps above the runs hold.
func (x *Index) memBytes() int64 {
	return int64(x.ints.n)*24 + int64(len(x.short))*48 + int64(len(x.long))*96
}

// spillDue says whether the maps are over what the budget leaves them.
func (x *Index) spillDue() bool {
	t := x.disk
	if t == nil {
		return false
	}
	limit := t.budget
	for _, r := range t.runs {
		limit -= r.memBytes()
	}
	return x.memBytes() > max(limit, t.budget/8)
}

// maybeSpill spills the maps when they are over budget.
func (x *Index) maybeSpill() {
	if x.spillDue() && x.disk.err == nil {
		if err := x.spill(); err != nil {
			x.disk.err = err
		}
	}
}

// memGet looks k up in the maps alone (a tombstone included).
func memGet[K string | []byte](x *Index, k K) (uint64, bool) {
	if v, ok := intKey(k); ok {
		if v == 0 {
			return x.ints.zero, x.ints.hasZero
		}
		if x.ints.n == 0 {
			return 0, false
		}
		return x.ints.slot(v)
	}
	if a, ok := shortKey(k); ok {
		v, found := x.short[a]
		return v, found
	}
	v, found := x.long[string(k)]
	return v, found
}

func memPut[K string | []byte](x *Index, k K, v uint64) {
	if iv, ok := intKey(k); ok {
		x.ints.put(iv, v)
		return
	}
	if a, ok := shortKey(k); ok {
		x.short[a] = v
		return
	}
	x.long[string(k)] = v
}

// tierGet is Get of an index with runs: the maps, the runs newest first,
// then the integer table's runs.
func tierGet[K string | []byte](x *Index, k K) (uint64, bool) {
	if v, ok := memGet(x, k); ok {
		if isTomb(v) {
			return 0, false
		}
		return v, true
	}
	t := x.disk
	if t.lastOK && string(t.lastKey) == string(k) {
		return t.lastVal, t.lastFound
	}
	kb := []byte(k)
	h := keyHash(kb)
	v, found := uint64(0), false
	for i := len(t.runs) - 1; i >= 0 && !found; i-- {
		var err error
		v, found, t.buf, err = t.runs[i].get(kb, h, t.buf)
		if err != nil && t.err == nil {
			t.err = err
		}
	}
	if found && isTomb(v) {
		v, found = 0, false
	} else if iv, ok := intKey(k); ok && !found {
		if r := x.ints.run(iv); r != nil {
			v, found = r.val+(iv-r.key), true
		}
	}
	t.lastKey, t.lastVal, t.lastFound, t.lastOK = append(t.lastKey[:0], kb...), v, found, true
	return v, found
}

// tierSet is Set of an index with runs; it reports whether k is new.
func tierSet[K string | []byte](x *Index, k K, v uint64) bool {
	_, live := tierGet(x, k)
	if !live {
		x.disk.live++
	}
	memPut(x, k, v)
	x.maybeSpill()
	return !live
}

// tierDel is Del of an index with runs.
func tierDel[K string | []byte](x *Index, k K) {
	if _, live := tierGet(x, k); !live {
		return
	}
	x.disk.live--
	memPut(x, k, tombPacked)
	x.maybeSpill()
}

// spill writes the maps out as a new run and empties them, then merges
// runs (see tier).
func (x *Index) spill() error {
	t := x.disk
	if len(t.runs) == 0 {
		t.live = x.Len()
	}
	var keys Keys
	var vals []uint64
	push := func(k []byte, v uint64) {
		if v == intTomb {
			v = tombPacked
		}
		keys.Push(append(keys.Tail(), k...))
		vals = append(vals, v)
	}
	var b [9]byte
	b[0] = 8
	if x.ints.hasZero {
		push(b[:], x.ints.zero)
	}
	for i := range x.ints.shards {
		for _, e := range x.ints.shards[i].slots {
			if e.key != 0 {
				push(intKeyBytes(b[:0], e.key), e.val)
			}
		}
	}
	for a, v := range x.short {
		push(a[:a[15]], v)
	}
	for k, v := range x.long {
		push([]byte(k), v)
	}
	if keys.Len() == 0 {
		return nil
	}
	order := make([]int32, keys.Len())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return bytes.Compare(keys.Key(int(i)), keys.Key(int(j))) })
	w, err := t.newRun(len(order))
	if err != nil {
		return err
	}
	for _, i := range order {
		if err := w.add(keys.Key(int(i)), vals[i]); err != nil {
			w.abort()
			return err
		}
	}
	r, err := w.finish()
	if err != nil {
		w.abort()
		return err
	}
	crashPoint("keyindex-spill")
	x.ints.clearSlots()
	clear(x.short)
	clear(x.long)
	t.runs = append(t.runs, r)
	t.lastOK = false
	t.spills++
	return x.compact()
}

func intKeyBytes(b []byte, v uint64) []byte {
	b = append(b, 8)
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func (t *tier) newRun(keys int) (*runWriter, error) {
	name := fmt.Sprintf("%08d%s", t.seq, runSuffix)
	t.seq++
	return newRunWriter(filepath.Join(t.dir, name), keys)
}

// compact merges the newest run into the one before it while that one is
// at most twice its size.
func (x *Index) compact() error {
	t := x.disk
	for n := len(t.runs); n >= 2 && t.runs[n-2].n <= 2*t.runs[n-1].n; n = len(t.runs) {
		r, err := x.merge(t.runs[n-2:], n == 2)
		if err != nil {
			return err
		}
		crashPoint("keyindex-merge")
		for _, old := range t.runs[n-2:] {
			old.remove(t.dir)
		}
		t.runs = append(t.runs[:n-2], r)
		t.lastOK = false
		t.merges++
	}
	return nil
}

func (r *run) remove(dir string) {
	_ = r.f.Close()
	_ = os.Remove(filepath.Join(dir, r.name))
}

// merge writes the entries of runs (oldest first) as one run, the newest
// entry of a key winning. Into the oldest run (bottom) a tombstone is
// dropped unless it hides a key of the integer table's runs.
func (x *Index) merge(runs []*run, bottom bool) (*run, error) {
	n := 0
	cs := make([]cursor, len(runs))
	for i, r := range runs {
		n += r.n
		cs[len(runs)-1-i] = r.cursor()
	}
	w, err := x.disk.newRun(n)
	if err != nil {
		return nil, err
	}
	err = mergeCursors(cs, func(k []byte, v uint64) error {
		if bottom && isTomb(v) {
			if iv, ok := intKey(k); !ok || x.ints.run(iv) == nil {
				return nil
			}
		}
		return w.add(k, v)
	})
	if err != nil {
		w.abort()
		return nil, err
	}
	r, err := w.finish()
	if err != nil {
		w.abort()
		return nil, err
	}
	return r, nil
}

// cursor reads sorted entries: next moves to the next one (false at the
// end or on an error, failed).
type cursor interface {
	next() bool
	key() []byte
	val() uint64
	failed() error
}

// mergeCursors yields the entries of cs (newest first) in key order, a
// key once, from the newest cursor holding it.
func mergeCursors(cs []cursor, yield func(k []byte, v uint64) error) error {
	live := make([]bool, len(cs))
	var k []byte
	for i, c := range cs {
		live[i] = c.next()
	}
	for {
		min := -1
		for i, c := range cs {
			if live[i] && (min < 0 || bytes.Compare(c.key(), cs[min].key()) < 0) {
				min = i
			}
		}
		if min < 0 {
			break
		}
		if err := yield(cs[min].key(), cs[min].val()); err != nil {
			return err
		}
		k = append(k[:0], cs[min].key()...)
		for i, c := range cs {
			for live[i] && bytes.Equal(c.key(), k) {
				live[i] = c.next()
			}
		}
	}
	for _, c := range cs {
		if err := c.failed(); err != nil {
			return err
		}
	}
	return nil
}

// clear removes every run.
func (t *tier) clear() {
	for _, r := range t.runs {
		r.remove(t.dir)
	}
	t.runs, t.live, t.lastOK, t.err = nil, 0, false, nil
}

// intRunCursor reads the integer table's runs as entries.
type intRunCursor struct {
	runs    []intRun
	i       int
	j       uint64
	started bool
	b       []byte
	v       uint64
}

func (c *intRunCursor) next() bool {
	if c.started {
		c.j++
	}
	c.started = true
	for c.i < len(c.runs) && c.j >= c.runs[c.i].n {
		c.i, c.j = c.i+1, 0
	}
	if c.i >= len(c.runs) {
		return false
	}
	r := c.runs[c.i]
	c.b, c.v = intKeyBytes(c.b[:0], r.key+c.j), r.val+c.j
	return true
}

func (c *intRunCursor) key() []byte   { return c.b }
func (c *intRunCursor) val() uint64   { return c.v }
func (c *intRunCursor) failed() error { return nil }

// eachLive yields every live key and location of a Spilled index, in key
// order, after spilling the maps (so the runs hold every change).
func (x *Index) eachLive(yield func(k []byte, l Loc) error) error {
	if err := x.spill(); err != nil {
		return err
	}
	t := x.disk
	cs := make([]cursor, 0, len(t.runs)+1)
	for i := len(t.runs) - 1; i >= 0; i-- {
		cs = append(cs, t.runs[i].cursor())
	}
	cs = append(cs, &intRunCursor{runs: x.ints.runs})
	return mergeCursors(cs, func(k []byte, v uint64) error {
		if isTomb(v) {
			return nil
		}
		return yield(k, unpackLoc(v))
	})
}
