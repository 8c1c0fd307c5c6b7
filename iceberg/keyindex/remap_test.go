package keyindex

import (
	"encoding/binary"
	"testing"
)

func intKeyOf(v uint64) string { return string(binary.BigEndian.AppendUint64([]byte{8}, v)) }

func TestRemap(t *testing.T) {
	x := New()
	a, b, c := x.AddFile("a"), x.AddFile("b"), x.AddFile("c")
	// A run of 100 serial keys in file a (as a copy leaves them), short
	// text keys and a long one in file b, a key in file c that stays.
	keys := &Keys{}
	for i := range 100 {
		keys.Push(append(keys.Tail(), intKeyOf(uint64(i+1))...))
	}
	if _, ok := x.AddAll(keys, a); !ok {
		t.Fatal("AddAll: duplicate")
	}
	long := "a key longer than fifteen bytes"
	x.Set("\x03abc", Loc{File: b, Pos: 0})
	x.Set(long, Loc{File: b, Pos: 2})
	x.Set(intKeyOf(1000), Loc{File: c, Pos: 7})
	x.Del(intKeyOf(50)) // row 49 of a was deleted before the rewrite read it

	n := x.AddFile("n")
	moved := map[int32][]Loc{a: make([]Loc, 100), b: {{File: n, Pos: 99}, {File: -1}, {File: n, Pos: 100}}}
	next := int64(0)
	for p := range 100 {
		if p == 49 {
			moved[a][p] = Loc{File: -1}
			continue
		}
		moved[a][p] = Loc{File: n, Pos: next}
		next++
	}
	got, ok := x.Remap(moved)
	if !ok || got != 101 {
		t.Fatalf("Remap = %d, %v; want 101, true", got, ok)
	}
	for i := range 100 {
		l, found := x.Get(intKeyOf(uint64(i + 1)))
		switch {
		case i == 49 && found:
			t.Errorf("deleted key 50 is at %v", l)
		case i < 49 && (!found || l != Loc{File: n, Pos: int64(i)}):
			t.Errorf("key %d at %v, %v; want %v", i+1, l, found, Loc{File: n, Pos: int64(i)})
		case i > 49 && (!found || l != Loc{File: n, Pos: int64(i - 1)}):
			t.Errorf("key %d at %v, %v; want %v", i+1, l, found, Loc{File: n, Pos: int64(i - 1)})
		}
	}
	for k, want := range map[string]Loc{"\x03abc": {File: n, Pos: 99}, long: {File: n, Pos: 100}, intKeyOf(1000): {File: c, Pos: 7}} {
		if l, _ := x.Get(k); l != want {
			t.Errorf("Get(%q) = %v, want %v", k, l, want)
		}
	}
	if x.Len() != 102 {
		t.Errorf("Len = %d, want 102", x.Len())
	}
}

func TestRemapDisagrees(t *testing.T) {
	x := New()
	a := x.AddFile("a")
	x.Set("\x01k", Loc{File: a, Pos: 3})
	if _, ok := x.Remap(map[int32][]Loc{a: {{}, {}, {}, {File: -1}}}); ok {
		t.Error("Remap of a live row the rewrite dropped: ok, want false")
	}
	if _, ok := x.Remap(map[int32][]Loc{a: {{}}}); ok {
		t.Error("Remap of a live row past the rewrite's rows: ok, want false")
	}
	if l, _ := x.Get("\x01k"); l != (Loc{File: a, Pos: 3}) {
		t.Errorf("after a refused Remap, Get = %v, want %v", l, Loc{File: a, Pos: 3})
	}
	x.SetRepeats(true)
	if _, ok := x.Remap(map[int32][]Loc{a: {{}, {}, {}, {}}}); ok {
		t.Error("Remap of an index whose keys repeat: ok, want false")
	}
}
