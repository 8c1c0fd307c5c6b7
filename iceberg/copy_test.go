package iceberg

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

// copied returns the keys of a copied file's rows.
func copied(keys ...string) keyindex.Keys {
	var c keyindex.Keys
	for _, k := range keys {
		c.Push(append(c.Tail(), k...))
	}
	return c
}

// TestCopyWriterTake: a copy's keys go into the index at their files and
// positions; a key copied twice is an error, unless the copy continues an
// interrupted one (upsert), where the copied row replaces the live one.
func TestCopyWriterTake(t *testing.T) {
	one, two := "\x08\x00\x00\x00\x00\x00\x00\x00\x01", "\x08\x00\x00\x00\x00\x00\x00\x00\x02"
	text, long := "\x03abc", "\x20"+strings.Repeat("k", 32)
	newMirror := func() *mirror {
		return &mirror{icebergTable: &icebergTable{ident: table.Identifier{"db", "t"}}, index: keyindex.New()}
	}
	m := newMirror()
	w := &CopyWriter{m: m, closed: []copiedFile{{path: "a", keys: copied(one, text)}, {path: "b", keys: copied(long, two)}}}
	rows, err := w.take(false)
	if err != nil || rows != 4 {
		t.Fatalf("take = %d, %v, want 4 rows", rows, err)
	}
	for k, want := range map[string]keyindex.Loc{one: {File: 0, Pos: 0}, text: {File: 0, Pos: 1}, long: {File: 1, Pos: 0}, two: {File: 1, Pos: 1}} {
		if l, ok := m.index.Get(k); !ok || l != want {
			t.Errorf("index of %q = %v, %t, want %v", k, l, ok, want)
		}
	}
	if files := m.index.Files(); len(files) != 2 || files[1] != "b" || len(m.closed) != 2 {
		t.Errorf("mirror files %v, %d closed, want [a b], 2", files, len(m.closed))
	}
	if w.keys.Len() != 0 || len(w.closed) != 0 {
		t.Errorf("writer keeps %d keys, %d files after take", w.keys.Len(), len(w.closed))
	}

	for _, k := range []string{one, text, long} {
		w := &CopyWriter{m: m, closed: []copiedFile{{path: "c", keys: copied(k)}}}
		if _, err := w.take(false); err == nil || !strings.Contains(err.Error(), "copied twice") {
			t.Errorf("take of %q copied again = %v, want a copied twice error", k, err)
		}
	}
	w = &CopyWriter{m: newMirror(), closed: []copiedFile{{path: "c", keys: copied(two, one, two)}}}
	if _, err := w.take(false); err == nil || !strings.Contains(err.Error(), "copied twice") {
		t.Errorf("take of a file with a key twice = %v, want a copied twice error", err)
	}

	m = newMirror()
	w = &CopyWriter{m: m, closed: []copiedFile{{path: "a", keys: copied(one, text)}}}
	if _, err := w.take(true); err != nil {
		t.Fatal(err)
	}
	w.closed = []copiedFile{{path: "b", keys: copied(text, two)}}
	if rows, err := w.take(true); err != nil || rows != 2 {
		t.Fatalf("upsert take = %d, %v, want 2 rows", rows, err)
	}
	if l, _ := m.index.Get(text); l != (keyindex.Loc{File: 1, Pos: 0}) {
		t.Errorf("upserted key at %v, want file 1 position 0", l)
	}
	if len(m.deletes) != 1 || m.deletes[0] != (posDelete{path: "a", pos: 1}) {
		t.Errorf("upsert deletes %v, want a position 1", m.deletes)
	}
	if m.index.Len() != 3 {
		t.Errorf("index holds %d keys after upsert, want 3", m.index.Len())
	}
}

// A schema change's "to check" mark names its columns so that a start
// after a crash can take the copy decision; names with the characters of
// the old %v form survive, and any other mark is a copy to run.
func TestCheckMark(t *testing.T) {
	nc := decode.NewColumns{Added: []string{"a, b]", "c"}, Retyped: []string{"d"}}
	got, ok := parseCheckMark(checkMark(nc))
	if !ok || !slices.Equal(got.Added, nc.Added) || !slices.Equal(got.Retyped, nc.Retyped) || len(got.Dropped) != 0 {
		t.Errorf("parseCheckMark(checkMark(%v)) = %v, %v; want the same columns, true", nc, got, ok)
	}
	for _, v := range []string{"", "to check: added [c], retyped []", "added [c], retyped [], dropped [x] from a mirror kept by the whole row", "rows with unknown values after a resumed copy"} {
		if got, ok := parseCheckMark(v); ok {
			t.Errorf("parseCheckMark(%q) = %v, true; want a copy to run (false)", v, got)
		}
	}
}
