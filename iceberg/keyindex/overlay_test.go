package keyindex

import "testing"

// The overlay sees its own changes over the base, leaves the base alone
// until merged, and a merge applies sets and deletions.
func TestOverlay(t *testing.T) {
	base := New()
	for i, k := range []string{"\x08\x00\x00\x00\x00\x00\x00\x00\x01", "short", "a key longer than fifteen bytes"} {
		base.Set(k, Loc{File: 0, Pos: int64(i)})
	}
	o := NewOverlay(base)
	int1, short, long := "\x08\x00\x00\x00\x00\x00\x00\x00\x01", "short", "a key longer than fifteen bytes"
	o.Del(int1)
	o.Set(short, Loc{File: 2, Pos: 7})
	o.Del(long)
	o.Set(long, Loc{File: 2, Pos: 8}) // deleted, then inserted again
	o.Set("new", Loc{File: 2, Pos: 9})
	o.Del("new") // inserted, then deleted: never in the base
	for _, tc := range []struct {
		k    string
		want Loc
		ok   bool
	}{{int1, Loc{}, false}, {short, Loc{File: 2, Pos: 7}, true}, {long, Loc{File: 2, Pos: 8}, true}, {"new", Loc{}, false}} {
		if l, ok := o.Get(tc.k); ok != tc.ok || ok && l != tc.want {
			t.Errorf("overlay get(%q) = %v, %t; want %v, %t", tc.k, l, ok, tc.want, tc.ok)
		}
	}
	if l, ok := base.Get(int1); !ok || l != (Loc{File: 0, Pos: 0}) {
		t.Errorf("base changed before the merge: get = %v, %t", l, ok)
	}
	o.Merge()
	if _, ok := base.Get(int1); ok {
		t.Error("deleted key still in the base after the merge")
	}
	if _, ok := base.Get("new"); ok {
		t.Error("a key inserted and deleted in the overlay is in the base")
	}
	if l, _ := base.Get(long); l != (Loc{File: 2, Pos: 8}) {
		t.Errorf("base get(long) = %v after the merge, want {2 8}", l)
	}
	if base.Len() != 2 {
		t.Errorf("base holds %d keys after the merge, want 2", base.Len())
	}
}
