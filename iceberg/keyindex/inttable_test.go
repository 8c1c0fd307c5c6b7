package keyindex

import (
	"math/rand/v2"
	"testing"
)

// TestIntTable runs random puts, gets and deletes against a Go map. Keys
// come from a small range, so runs of colliding keys form, wrap around the
// end of a shard and are deleted from the middle.
func TestIntTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    uint64 // keys drawn from [0, keys), plus a few extreme ones
		ops     int
		reserve int
	}{
		{"small shards", 3000, 200_000, 0},
		{"grown shards", 100_000, 300_000, 0},
		{"reserved", 50_000, 200_000, 40_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			x, want := newIntTable(), map[uint64]uint64{}
			x.reserve(tc.reserve)
			key := func() uint64 {
				switch r.IntN(50) {
				case 0:
					return 0
				case 1:
					return ^uint64(0) - r.Uint64N(3)
				}
				return r.Uint64N(tc.keys)
			}
			randomOps(t, r, x, want, tc.ops, 2, key)
			checkIntTable(t, x, want)
		})
	}
}

// randomOps runs ops random puts (puts in 3) and deletes (1 in 3) of keys
// from key on x and want, and after each a get of a random key and len.
func randomOps(t *testing.T, r *rand.Rand, x *intTable, want map[uint64]uint64, ops, puts int, key func() uint64) {
	t.Helper()
	for op := range ops {
		k := key()
		switch c := r.IntN(3); {
		case c < puts:
			v := r.Uint64N(1 << 60)
			_, had := want[k]
			if added := x.put(k, v); added == had {
				t.Fatalf("op %d: put(%d) = %t, key was there: %t", op, k, added, had)
			}
			want[k] = v
		case c == puts:
			x.del(k)
			delete(want, k)
		}
		k = key()
		got, ok := x.get(k)
		if w, wok := want[k]; ok != wok || got != w {
			t.Fatalf("op %d: get(%d) = %d, %t, want %d, %t", op, k, got, ok, w, wok)
		}
		if x.len() != len(want) {
			t.Fatalf("op %d: len() = %d, want %d", op, x.len(), len(want))
		}
	}
}

// checkIntTable checks that x holds exactly want, by get and by all, then
// that clear empties it.
func checkIntTable(t *testing.T, x *intTable, want map[uint64]uint64) {
	t.Helper()
	for k, w := range want {
		if got, ok := x.get(k); !ok || got != w {
			t.Fatalf("get(%d) = %d, %t, want %d", k, got, ok, w)
		}
	}
	seen := 0
	for k, v := range x.all() {
		if w, ok := want[k]; !ok || v != w {
			t.Fatalf("all() yields %d: %d, want %d (present: %t)", k, v, w, ok)
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("all() yields %d keys, want %d", seen, len(want))
	}
	x.clear()
	if x.len() != 0 || len(x.runs) != 0 {
		t.Fatalf("after clear: len() = %d, %d runs", x.len(), len(x.runs))
	}
	for k := range want {
		if _, ok := x.get(k); ok {
			t.Fatalf("get(%d) after clear found it", k)
		}
	}
}

func BenchmarkIntTablePut(b *testing.B) {
	x := newIntTable()
	x.reserve(b.N)
	for i := range b.N {
		x.put(uint64(i)+1, uint64(i))
	}
}

func BenchmarkIntTableGet(b *testing.B) {
	const n = 1 << 21
	x := newIntTable()
	for i := range n {
		x.put(uint64(i)+1, uint64(i))
	}
	b.ResetTimer()
	for i := range b.N {
		x.get(uint64(i%n) + 1)
	}
}

// BenchmarkIntTableInsert inserts 5M keys of a bigserial column one by one
// and with putAll, into a table reserved for them (as a copy does).
func BenchmarkIntTableInsert(b *testing.B) {
	const n = 5_000_000
	kv := make([]intSlot, n)
	for i := range kv {
		kv[i] = intSlot{uint64(i + 1), uint64(i)}
	}
	for _, tc := range []struct {
		name   string
		insert func(*intTable)
	}{
		{"put", func(t *intTable) {
			for _, e := range kv {
				t.put(e.key, e.val)
			}
		}},
		{"putAll", func(t *intTable) { t.putAll(kv) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				t := newIntTable()
				t.reserve(n)
				b.StartTimer()
				tc.insert(t)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds()) /* timer stopped while reserving */ /float64(b.N*n), "ns/key")
		})
	}
}

// putAll leaves the table as put does, key 0 included, and names a key
// that was there already.
func TestIntTablePutAll(t *testing.T) {
	var kv []intSlot
	for i := range 100_000 {
		kv = append(kv, intSlot{uint64(i) * 0x9e3779b97f4a7c15, uint64(i)}) // key 0 first
	}
	one, all := newIntTable(), newIntTable()
	all.put(kv[5].key, 99) // grows from empty
	one.put(kv[5].key, 99)
	for _, e := range kv[:5] {
		one.put(e.key, e.val)
	}
	if _, ok := all.putAll(kv[:5]); !ok {
		t.Fatal("putAll of new keys reported one there already")
	}
	for _, e := range kv[6:] {
		one.put(e.key, e.val)
	}
	if _, ok := all.putAll(kv[6:]); !ok {
		t.Fatal("putAll of new keys reported one there already")
	}
	if one.len() != all.len() || all.len() != len(kv) {
		t.Fatalf("put holds %d keys, putAll %d; want %d", one.len(), all.len(), len(kv))
	}
	for k, v := range one.all() {
		if got, ok := all.get(k); !ok || got != v {
			t.Fatalf("key %#x: putAll table has %d, %t; put table %d", k, got, ok, v)
		}
	}
	if dup, ok := all.putAll([]intSlot{{12345, 1}, kv[77]}); ok || dup != kv[77].key {
		t.Errorf("putAll over an existing key = %#x, %t; want %#x, false", dup, ok, kv[77].key)
	}
}

// TestIntTableRuns fills a table the way copies do, with runs of
// consecutive keys at consecutive values mixed with stray keys and short
// stretches, then runs random puts, gets and deletes over the same keys
// against a Go map: slots override runs, deleted run keys stay deleted,
// keys put back after a delete come back.
func TestIntTableRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	x, want := newIntTable(), map[uint64]uint64{}
	x.reserve(50_000)
	var kv []intSlot
	next, file := uint64(1), uint64(0)
	flush := func() {
		r.Shuffle(len(kv)/500, func(i, j int) { // whole stretches change places
			for k := range 500 {
				kv[i*500+k], kv[j*500+k] = kv[j*500+k], kv[i*500+k]
			}
		})
		if _, ok := x.putAll(kv); !ok {
			t.Fatal("putAll of new keys reported one there already")
		}
		for _, e := range kv {
			want[e.key] = e.val
		}
		kv = kv[:0]
		file++
	}
	for len(want)+len(kv) < 40_000 {
		n := 1 + r.IntN(3*minRun) // some stretches too short for a run
		for i := range n {
			kv = append(kv, intSlot{next + uint64(i), file<<posBits | uint64(len(kv))})
		}
		next += uint64(n) + uint64(r.IntN(2)) // sometimes adjacent to the next
		if r.IntN(20) == 0 {
			flush()
		}
	}
	flush()
	if len(x.runs) == 0 || x.runKeys < len(want)/2 {
		t.Fatalf("%d runs of %d keys: the keys did not form runs", len(x.runs), x.runKeys)
	}
	if x.len() != len(want) {
		t.Fatalf("len() = %d, want %d", x.len(), len(want))
	}
	if dup, ok := x.putAll([]intSlot{{next + 5, 1}, {7, 3}}); ok || dup != 7 {
		t.Fatalf("putAll of a key in a run = %d, %t; want 7, false", dup, ok)
	}
	x.del(next + 5)
	delete(want, next+5)
	var run []intSlot
	for i := range uint64(minRun) {
		run = append(run, intSlot{20 + i, 99<<posBits | i})
	}
	if dup, ok := x.putAll(run); ok || dup < 20 || dup >= 20+minRun {
		t.Fatalf("putAll of a run over a run = %d, %t; want a key of 20..%d, false", dup, ok, 20+minRun-1)
	}
	// The failed putAll left its keys in place: take what the table says.
	for k := range want {
		v, _ := x.get(k)
		want[k] = v
	}
	randomOps(t, r, x, want, 200_000, 1, func() uint64 { return 1 + r.Uint64N(next+10) })
	checkIntTable(t, x, want)
}

// TestIntBatch puts serial keys in over several batches: they become one
// run; a key added twice comes back with the value it was added with.
func TestIntBatch(t *testing.T) {
	x := newIntTable()
	b := intBatch{t: x}
	for k := uint64(1); k <= 3*intBatchKeys; k++ {
		if _, ok := b.add(k, 7<<posBits|k); !ok {
			t.Fatalf("add(%d) reported a key there already", k)
		}
	}
	if _, ok := b.flush(); !ok {
		t.Fatal("flush reported a key there already")
	}
	if len(x.runs) != 1 || x.len() != 3*intBatchKeys {
		t.Fatalf("%d runs, %d keys; want 1 run of %d", len(x.runs), x.len(), 3*intBatchKeys)
	}
	b.add(5_000_000, 1)
	b.add(99, 8<<posBits|42)
	if dup, ok := b.flush(); ok || dup != (intSlot{99, 8<<posBits | 42}) {
		t.Fatalf("flush of a key there already = %v, %t; want {99, its value}, false", dup, ok)
	}
}
