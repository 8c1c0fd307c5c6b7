package iceberg

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
			for op := range tc.ops {
				k := key()
				switch r.IntN(3) {
				case 0, 1:
					v := r.Uint64()
					_, had := want[k]
					if added := x.put(k, v); added == had {
						t.Fatalf("op %d: put(%d) = %t, key was there: %t", op, k, added, had)
					}
					want[k] = v
				case 2:
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
			if x.len() != 0 {
				t.Fatalf("len() after clear = %d", x.len())
			}
			for k := range want {
				if _, ok := x.get(k); ok {
					t.Fatalf("get(%d) after clear found it", k)
				}
			}
		})
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
