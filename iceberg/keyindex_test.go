package iceberg

import (
	"fmt"
	"strings"
	"testing"
)

func TestKeyIndex(t *testing.T) {
	x := newKeyIndex()
	keys := []string{"", "a", strings.Repeat("k", 15), strings.Repeat("k", 16), strings.Repeat("long", 40), "\x00", "\x00\x00"}
	for i, k := range keys {
		x.set(k, loc{file: int32(i), pos: int64(i) << 35})
	}
	if x.len() != len(keys) {
		t.Fatalf("len() = %d, want %d", x.len(), len(keys))
	}
	for i, k := range keys {
		l, ok := x.get(k)
		if !ok || l.file != int32(i) || l.pos != int64(i)<<35 {
			t.Errorf("get(%q) = %v, %v, want file %d pos %d", k, l, ok, i, int64(i)<<35)
		}
	}
	seen := map[string]bool{}
	for k, l := range x.all() {
		if got, _ := x.get(k); got != l {
			t.Errorf("all() yields %q with %v, get says %v", k, l, got)
		}
		seen[k] = true
	}
	if len(seen) != len(keys) {
		t.Errorf("all() yielded %d keys, want %d", len(seen), len(keys))
	}
	x.del("a")
	x.del(strings.Repeat("long", 40))
	if _, ok := x.get("a"); ok {
		t.Errorf("get(a) after del found it")
	}
	if x.len() != len(keys)-2 {
		t.Errorf("len() after two deletes = %d, want %d", x.len(), len(keys)-2)
	}
	if l := unpackLoc(packLoc(loc{file: 1<<24 - 1, pos: 1<<40 - 1})); l.file != 1<<24-1 || l.pos != 1<<40-1 {
		t.Errorf("pack/unpack of the largest location = %v", l)
	}
}

func BenchmarkKeyIndexSet(b *testing.B) {
	x := newKeyIndex()
	for i := 0; i < b.N; i++ {
		x.set(fmt.Sprint(i), loc{pos: int64(i)})
	}
}
