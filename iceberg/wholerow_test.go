package iceberg

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// TestKeyIndexRepeats: in an index whose rows may repeat, a key set three
// times has three rows, each del removes one (the last set first), every
// row is yielded, and the index file keeps them all.
func TestKeyIndexRepeats(t *testing.T) {
	x := newKeyIndex()
	x.setRepeats(true)
	k := string(bytes.Repeat([]byte{7}, rowKeyLen))
	for i := range int64(3) {
		x.set(k, loc{file: 1, pos: i})
	}
	x.set("other", loc{file: 2, pos: 0})
	if x.len() != 4 {
		t.Fatalf("len() = %d, want 4", x.len())
	}
	if l, ok := x.get(k); !ok || l.pos != 2 {
		t.Fatalf("get = %v, %t; want the last row set, position 2", l, ok)
	}
	x.del(k)
	if l, ok := x.get(k); !ok || l.pos != 1 || x.len() != 3 {
		t.Fatalf("after one del: get = %v, %t, len %d; want position 1, len 3", l, ok, x.len())
	}
	var rows []int64
	for kb, l := range x.all() {
		if string(kb) == k {
			rows = append(rows, l.pos)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("all() yields the key's rows %v, want positions 0 and 1", rows)
	}

	m := &mirror{files: []string{"a", "b", "c"}, index: x}
	var buf bytes.Buffer
	if err := m.writeIndex(&buf, []byte("stamp")); err != nil {
		t.Fatal(err)
	}
	_, y, err := readIndex(buf.Bytes(), []byte("stamp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if y.len() != 3 {
		t.Fatalf("read back %d rows, want 3", y.len())
	}
	y.del(k)
	y.del(k)
	if _, ok := y.get(k); ok || y.len() != 1 {
		t.Fatalf("read back: after two dels the key is still there (len %d)", y.len())
	}
	x.clear()
	if x.len() != 0 {
		t.Fatalf("len() after clear = %d", x.len())
	}
}

// TestWholeRowKey: a whole-row key tells NULL from every value (an empty
// string, a value moved to another column), is the same for equal rows,
// and the key built from the source's text equals the one read back from
// the Parquet file, NULLs included, so an index rebuilt from the table
// finds every row by the change that names it, as many times as it is live.
func TestWholeRowKey(t *testing.T) {
	text := mapping.Builtin(mapping.OIDText, -1)
	num := mapping.Builtin(mapping.OIDInt4, -1)
	rel := &decode.Relation{ID: 1, Schema: "public", Name: "t", ReplicaIdentity: 'f', WholeRow: true, Columns: []decode.Column{
		{Name: "a", TypeOID: num.OID, TypeMod: -1, TypeName: num.Name, Type: num},
		{Name: "b", TypeOID: text.OID, TypeMod: -1, TypeName: text.Name, Type: text},
	}}
	sc, err := MirrorSchema(rel)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.IdentifierFieldIDs) != 0 || sc.Fields()[0].Required {
		t.Fatalf("a whole-row mirror's schema has identifier fields %v or required columns", sc.IdentifierFieldIDs)
	}
	m := &mirror{icebergTable: &icebergTable{ident: table.Identifier{"public", "t"}, fs: icebergio.LocalFS{}}, rel: rel, index: newKeyIndex()}
	m.keyCols, m.keyIDs = []int{0, 1}, []int{1, 2}
	asc, err := tableArrowSchema(sc)
	if err != nil {
		t.Fatal(err)
	}
	m.keyType = []arrow.DataType{asc.Field(0).Type, asc.Field(1).Type}
	m.index.setRepeats(true)
	datum := func(v string) decode.Datum {
		if v == nullText {
			return decode.Datum{Kind: decode.Null}
		}
		return decode.Datum{Kind: decode.Text, Data: []byte(v)}
	}
	key := func(a, b string) string {
		k, err := m.key(decode.Tuple{datum(a), datum(b)})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rows := [][2]string{{"1", nullText}, {"1", ""}, {nullText, "1"}, {"1", "1"}, {nullText, nullText}, {"1", nullText}, {nullText, nullText}}
	seen := map[string][2]string{}
	for _, r := range rows[:5] {
		k := key(r[0], r[1])
		if len(k) != rowKeyLen {
			t.Fatalf("key of %q is %d bytes, want %d", r, len(k), rowKeyLen)
		}
		if o, dup := seen[k]; dup {
			t.Errorf("rows %q and %q have one key", o, r)
		}
		seen[k] = r
	}
	if key(rows[0][0], rows[0][1]) != key(rows[5][0], rows[5][1]) {
		t.Error("equal rows have different keys")
	}

	df := writeDataFile(t, rel, filepath.Join(t.TempDir(), "d.parquet"), len(rows), func(r int) []string { return rows[r][:] })
	m.files = []string{df.FilePath()}
	if err := m.readKeys(context.Background(), df, 0, m.keyIDs, map[int64]bool{2: true}); err != nil {
		t.Fatal(err)
	}
	if m.index.len() != len(rows)-1 {
		t.Fatalf("rebuilt %d rows, want %d (one deleted)", m.index.len(), len(rows)-1)
	}
	for i, r := range rows {
		k := key(r[0], r[1])
		l, ok := m.index.get(k)
		if i == 2 {
			if ok {
				t.Errorf("deleted row %q found at %v", r, l)
			}
			continue
		}
		if !ok {
			t.Errorf("row %d %q: its key from text is not in the index read from Parquet", i, r)
			continue
		}
		m.index.del(k)
	}
	if m.index.len() != 0 {
		t.Errorf("%d rows left after deleting each row once", m.index.len())
	}
}
