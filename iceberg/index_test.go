package iceberg

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// TestReadKeysNamesBothRows: rebuilding the key index from a table in
// which a key is live twice (another writer's doing) fails, naming both
// rows, for an integer key (indexed by batches, so the second row may
// meet the first in the same batch or another file's) and a text key.
func TestReadKeysNamesBothRows(t *testing.T) {
	text := mapping.Builtin(mapping.OIDText, -1)
	for _, key := range []*mapping.Type{mapping.Builtin(mapping.OIDInt8, -1), text} {
		rel := &decode.Relation{ID: 1, Schema: "public", Name: "t", ReplicaIdentity: 'd', Columns: []decode.Column{
			{Name: "id", TypeOID: key.OID, TypeMod: -1, TypeName: key.Name, Type: key, Key: true},
			{Name: "v", TypeOID: text.OID, TypeMod: -1, TypeName: "text", Type: text},
		}}
		dir := t.TempDir()
		write := func(name string, keys ...int) icego.DataFile {
			return writeDataFile(t, rel, filepath.Join(dir, name), len(keys), func(r int) []string {
				return []string{strconv.Itoa(keys[r]), "x"}
			})
		}
		serial := make([]int, 200) // a run of keys 1-200
		for i := range serial {
			serial[i] = i + 1
		}
		for _, tc := range []struct {
			name  string
			files [][]int
			want  []string // the two rows, in either order
		}{
			{"across files", [][]int{serial, {500, 150}}, []string{"a.parquet row 149", "b.parquet row 1"}},
			{"in one file", [][]int{{7, 8, 9, 8}}, []string{"a.parquet row 1", "a.parquet row 3"}},
		} {
			m := localMirror(rel)
			var err error
			for i, keys := range tc.files {
				df := write(string(rune('a'+i))+".parquet", keys...)
				if err = m.readKeys(context.Background(), df, []int{1}, nil); err != nil {
					break
				}
			}
			both := func(a, b string) string { return "live twice (" + dir + "/" + a + " and " + dir + "/" + b + ")" }
			if err == nil || !strings.Contains(err.Error(), both(tc.want[0], tc.want[1])) && !strings.Contains(err.Error(), both(tc.want[1], tc.want[0])) {
				t.Errorf("%s key, %s: %v, want both rows: %s and %s", key.Name, tc.name, err, tc.want[0], tc.want[1])
			}
		}
	}
}

// localMirror is a mirror of rel over local files, without a table: enough
// to build keys and read them back from data files.
func localMirror(rel *decode.Relation) *mirror {
	return &mirror{icebergTable: &icebergTable{ident: table.Identifier{"public", "t"}, fs: icebergio.LocalFS{}}, rel: rel, index: keyindex.New()}
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
	m := localMirror(rel)
	m.keyCols, m.keyIDs = []int{0, 1}, []int{1, 2}
	asc, err := tableArrowSchema(sc)
	if err != nil {
		t.Fatal(err)
	}
	m.keyType = []arrow.DataType{asc.Field(0).Type, asc.Field(1).Type}
	m.index.SetRepeats(true)
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
		if len(k) != keyindex.RowKeyLen {
			t.Fatalf("key of %q is %d bytes, want %d", r, len(k), keyindex.RowKeyLen)
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
	if err := m.readKeys(context.Background(), df, m.keyIDs, map[int64]bool{2: true}); err != nil {
		t.Fatal(err)
	}
	if m.index.Len() != len(rows)-1 {
		t.Fatalf("rebuilt %d rows, want %d (one deleted)", m.index.Len(), len(rows)-1)
	}
	for i, r := range rows {
		k := key(r[0], r[1])
		l, ok := m.index.Get(k)
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
		m.index.Del(k)
	}
	if m.index.Len() != 0 {
		t.Errorf("%d rows left after deleting each row once", m.index.Len())
	}
}
