package iceberg

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestIndexFileRoundTrip writes an index holding runs (overridden and
// deleted keys among them), short keys and long keys, and reads it back:
// the same keys at the same locations, and the runs are runs again.
func TestIndexFileRoundTrip(t *testing.T) {
	x := newKeyIndex()
	key := func(v uint64) []byte { return binary.BigEndian.AppendUint64([]byte{8}, v) }
	for f := range int32(3) {
		keys := copiedKeys{}
		for i := range uint64(1000) {
			keys.buf = append(keys.buf, key(uint64(f)*5000+i)...)
			keys.ends = append(keys.ends, uint32(len(keys.buf)))
		}
		if _, ok := x.addAll(&keys, f); !ok {
			t.Fatal("addAll of new keys reported one there already")
		}
	}
	x.set(string(key(10)), loc{file: 3, pos: 7}) // overrides a run's key
	x.del(string(key(11)))                       // deletes one
	x.set(string(key(99_999)), loc{file: 3, pos: 8})
	x.set("\x01ab", loc{file: 3, pos: 9})
	x.set(string(bytes.Repeat([]byte("x"), 40)), loc{file: 3, pos: 10})
	if len(x.ints.runs) != 3 {
		t.Fatalf("%d runs, want 3", len(x.ints.runs))
	}
	m := &mirror{files: []string{"a", "b", "c", "d"}, index: x}
	var buf bytes.Buffer
	stamp := []byte("uuid, snapshot, schema, key")
	if err := m.writeIndex(&buf, stamp); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{"uuid, snapshot, schema, kez", "uuid, snapshot, schema", ""} {
		if _, _, err := readIndex(buf.Bytes(), []byte(other), false); err != errStaleIndex {
			t.Fatalf("read for stamp %q: %v, want errStaleIndex", other, err)
		}
	}
	files, y, err := readIndex(buf.Bytes(), stamp, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 || files[3] != "d" {
		t.Fatalf("files %q", files)
	}
	if y.len() != x.len() || x.len() != 3000+2 {
		t.Fatalf("read %d keys, wrote %d, want %d", y.len(), x.len(), 3002)
	}
	for k, l := range x.all() {
		if got, ok := y.get(string(k)); !ok || got != l {
			t.Fatalf("key %q: read %v, %t; want %v", k, got, ok, l)
		}
	}
	if _, ok := y.get(string(key(11))); ok {
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
	if _, _, err := readIndex(old, stamp, false); err != errStaleIndex {
		t.Fatalf("version 2 file: %v, want errStaleIndex", err)
	}

	damaged := bytes.Clone(buf.Bytes())
	damaged[len(damaged)/2] ^= 1
	if _, _, err := readIndex(damaged, stamp, false); err == nil {
		t.Fatal("a damaged file was read")
	}
}
