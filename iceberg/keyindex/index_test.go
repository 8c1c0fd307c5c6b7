package keyindex

import (
	"fmt"
	"strings"
	"testing"
)

func TestKeyIndex(t *testing.T) {
	x := New()
	keys := []string{"", "a", strings.Repeat("k", 15), strings.Repeat("k", 16), strings.Repeat("long", 40), "\x00", "\x00\x00",
		// one 8-byte key part (the integer map), and 9-byte keys that are not
		"\x08\x00\x00\x00\x00\x00\x00\x00\x01", "\x08\xff\xff\xff\xff\xff\xff\xff\xff", "\x08abcdefgh",
		"\x07abcdefgh", "\x01a\x06bcdefg", "\x08abcdefghi", "\x08abcdefg"}
	for i, k := range keys {
		x.Set(k, Loc{File: int32(i), Pos: int64(i) << 35})
	}
	if x.Len() != len(keys) {
		t.Fatalf("len() = %d, want %d", x.Len(), len(keys))
	}
	for i, k := range keys {
		l, ok := x.Get(k)
		if !ok || l.File != int32(i) || l.Pos != int64(i)<<35 {
			t.Errorf("get(%q) = %v, %v, want file %d pos %d", k, l, ok, i, int64(i)<<35)
		}
	}
	seen := map[string]bool{}
	for kb, l := range x.All() {
		k := string(kb)
		if got, _ := x.Get(k); got != l {
			t.Errorf("all() yields %q with %v, get says %v", k, l, got)
		}
		seen[k] = true
	}
	if len(seen) != len(keys) {
		t.Errorf("all() yielded %d keys, want %d", len(seen), len(keys))
	}
	deleted := []string{"a", strings.Repeat("long", 40), "\x08abcdefgh"}
	for _, k := range deleted {
		x.Del(k)
		if _, ok := x.Get(k); ok {
			t.Errorf("get(%q) after del found it", k)
		}
	}
	if x.Len() != len(keys)-len(deleted) {
		t.Errorf("len() after %d deletes = %d, want %d", len(deleted), x.Len(), len(keys)-len(deleted))
	}
	if l := unpackLoc(packLoc(Loc{File: 1<<24 - 1, Pos: 1<<40 - 1})); l.File != 1<<24-1 || l.Pos != 1<<40-1 {
		t.Errorf("pack/unpack of the largest location = %v", l)
	}
}

func TestKeyIndexAdd(t *testing.T) {
	for _, hint := range []int{0, 100} {
		x := New()
		x.ReserveInts(hint)
		keys := []string{"\x08\x00\x00\x00\x00\x00\x00\x00\x05", "short", strings.Repeat("long", 8)}
		for i, k := range keys {
			if !x.Add([]byte(k), Loc{Pos: int64(i)}) {
				t.Errorf("add(%q) to an index without it = false", k)
			}
			if l, ok := x.Get(k); !ok || l.Pos != int64(i) {
				t.Errorf("get(%q) after add = %v, %v, want pos %d", k, l, ok, i)
			}
		}
		for _, k := range keys {
			if x.Add([]byte(k), Loc{Pos: 99}) {
				t.Errorf("add(%q) a second time = true", k)
			}
		}
		if x.Len() != len(keys) {
			t.Errorf("len() = %d, want %d", x.Len(), len(keys))
		}
		x.ReserveInts(1000) // not empty: left as it is
		if x.Len() != len(keys) {
			t.Errorf("len() after reserveInts on a full index = %d, want %d", x.Len(), len(keys))
		}
	}
}

func BenchmarkKeyIndexSet(b *testing.B) {
	x := New()
	for i := 0; i < b.N; i++ {
		x.Set(fmt.Sprint(i), Loc{Pos: int64(i)})
	}
}
