package keyindex

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestIndexFileRoundTrip writes an index holding runs (overridden and
// deleted keys among them), short keys and long keys, and reads it back:
// the same keys at the same locations, and the runs are runs again.
func TestIndexFileRoundTrip(t *testing.T) {
	x := New()
	key := func(v uint64) []byte { return binary.BigEndian.AppendUint64([]byte{8}, v) }
	for f := range int32(3) {
		keys := Keys{}
		for i := range uint64(1000) {
			keys.Push(append(keys.Tail(), key(uint64(f)*5000+i)...))
		}
		if _, ok := x.AddAll(&keys, f); !ok {
			t.Fatal("addAll of new keys reported one there already")
		}
	}
	x.Set(string(key(10)), Loc{File: 3, Pos: 7}) // overrides a run's key
	x.Del(string(key(11)))                       // deletes one
	x.Set(string(key(99_999)), Loc{File: 3, Pos: 8})
	x.Set("\x01ab", Loc{File: 3, Pos: 9})
	x.Set(string(bytes.Repeat([]byte("x"), 40)), Loc{File: 3, Pos: 10})
	if len(x.ints.runs) != 3 {
		t.Fatalf("%d runs, want 3", len(x.ints.runs))
	}
	for _, f := range []string{"a", "b", "c", "d"} {
		x.AddFile(f)
	}
	var buf bytes.Buffer
	stamp := []byte("uuid, snapshot, schema, key")
	if err := x.Write(&buf, stamp); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"uuid, snapshot, schema, kez", "uuid, snapshot, schema", ""} {
		if _, err := Read(buf.Bytes(), []byte(other), false); err != ErrStale {
			t.Fatalf("read for stamp %q: %v, want ErrStale", other, err)
		}
	}
	y, err := Read(buf.Bytes(), stamp, false)
	if err != nil {
		t.Fatal(err)
	}
	if files := y.Files(); len(files) != 4 || files[3] != "d" {
		t.Fatalf("files %q", y.Files())
	}
	if y.Len() != x.Len() || x.Len() != 3000+2 {
		t.Fatalf("read %d keys, wrote %d, want %d", y.Len(), x.Len(), 3002)
	}
	for k, l := range x.All() {
		if got, ok := y.Get(string(k)); !ok || got != l {
			t.Fatalf("key %q: read %v, %t; want %v", k, got, ok, l)
		}
	}
	if _, ok := y.Get(string(key(11))); ok {
		t.Fatal("a deleted key came back")
	}
	if len(y.ints.runs) < 3 {
		t.Fatalf("read back %d runs, want the 3 written (split at the changed keys)", len(y.ints.runs))
	}
	if buf.Len() > 500 {
		t.Errorf("index file of 3 runs and 3 other keys is %d bytes: runs not written as runs?", buf.Len())
	}

	// A file of an earlier version (no stamp) is stale.
	old := bytes.Clone(buf.Bytes())
	copy(old, "PG2IKIX2")
	if _, err := Read(old, stamp, false); err != ErrStale {
		t.Fatalf("version 2 file: %v, want ErrStale", err)
	}

	damaged := bytes.Clone(buf.Bytes())
	damaged[len(damaged)/2] ^= 1
	if _, err := Read(damaged, stamp, false); err == nil {
		t.Fatal("a damaged file was read")
	}
}

// TestKeyIndexRepeats: in an index whose rows may repeat, a key set three
// times has three rows, each del removes one (the last set first), every
// row is yielded, and the index file keeps them all.
func TestKeyIndexRepeats(t *testing.T) {
	x := New()
	x.SetRepeats(true)
	k := string(bytes.Repeat([]byte{7}, RowKeyLen))
	for i := range int64(3) {
		x.Set(k, Loc{File: 1, Pos: i})
	}
	x.Set("other", Loc{File: 2, Pos: 0})
	if x.Len() != 4 {
		t.Fatalf("len() = %d, want 4", x.Len())
	}
	if l, ok := x.Get(k); !ok || l.Pos != 2 {
		t.Fatalf("get = %v, %t; want the last row set, position 2", l, ok)
	}
	x.Del(k)
	if l, ok := x.Get(k); !ok || l.Pos != 1 || x.Len() != 3 {
		t.Fatalf("after one del: get = %v, %t, len %d; want position 1, len 3", l, ok, x.Len())
	}
	var rows []int64
	for kb, l := range x.All() {
		if string(kb) == k {
			rows = append(rows, l.Pos)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("all() yields the key's rows %v, want positions 0 and 1", rows)
	}

	for _, f := range []string{"a", "b", "c"} {
		x.AddFile(f)
	}
	var buf bytes.Buffer
	if err := x.Write(&buf, []byte("stamp")); err != nil {
		t.Fatal(err)
	}
	y, err := Read(buf.Bytes(), []byte("stamp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if y.Len() != 3 {
		t.Fatalf("read back %d rows, want 3", y.Len())
	}
	y.Del(k)
	y.Del(k)
	if _, ok := y.Get(k); ok || y.Len() != 1 {
		t.Fatalf("read back: after two dels the key is still there (len %d)", y.Len())
	}
	x.Clear()
	if x.Len() != 0 {
		t.Fatalf("len() after clear = %d", x.Len())
	}
}
