package iceberg

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Captured DDL, applied by the sink transaction by transaction: a column
// renamed (by attnum) keeps its values under the new name in the mirror
// and in both structs of the changelog; a column added is there for the
// rows after it; a key change re-keys the mirror at the commit, so a
// delete by the new key removes its row; a table renamed moves both
// Iceberg tables; a DROP TABLE keeps them (the default policy), marked
// with PropDropped, and the sink forgets the table.
func TestSinkDDL(t *testing.T) {
	ctx := context.Background()
	cat, s, rel := keyedSink(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text := func(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }
	var end decode.LSN = 1000
	tx := func(apply func()) {
		t.Helper()
		end += 100
		s.Begin(uint32(end), end-10, time.Now())
		apply()
		if _, _, err := s.Commit(ctx, end); err != nil {
			t.Fatal(err)
		}
		must(s.Flush(ctx))
	}
	yes, no := true, false
	col := func(attnum int, name string, oid uint32, key bool) decode.DDLColumn {
		k := key
		return decode.DDLColumn{AttNum: attnum, Name: name, TypeOID: oid, NotNull: key, Generated: &no, Key: &k}
	}
	event := func(tag, name string, cols ...decode.DDLColumn) *decode.DDLEvent {
		return &decode.DDLEvent{RelID: rel.ID, Tag: tag, Schema: "public", Table: name, WholeRow: &no, Columns: cols}
	}
	load := func(name string) *table.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, table.Identifier{"public", name})
		if err != nil {
			t.Fatalf("load public.%s: %v", name, err)
		}
		return tbl
	}
	columns := func(tbl *table.Table) []string {
		var out []string
		for _, f := range tbl.Schema().Fields() {
			out = append(out, f.Name)
		}
		return out
	}

	must(s.InitAttNums(ctx, rel.ID, map[int]string{1: "id", 2: "v"}))
	tx(func() {
		must(s.Change(&decode.Change{Op: decode.Insert, Rel: rel, After: decode.Tuple{text("1"), text("a")}}))
		must(s.Change(&decode.Change{Op: decode.Insert, Rel: rel, After: decode.Tuple{text("2"), text("b")}}))
	})

	// ALTER TABLE t RENAME v TO w; ALTER TABLE t ADD x int4; then a row
	// of the new shape, announced by its relation message.
	wide := &decode.Relation{ID: rel.ID, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20}, {Name: "w", TypeOID: 25}, {Name: "x", TypeOID: 23},
	}}
	tx(func() {
		_, err := s.DDL(ctx, event("ALTER TABLE", "t", col(1, "id", 20, true), col(2, "w", 25, false), col(3, "x", 23, false)))
		must(err)
		_, err = s.Relation(ctx, wide)
		must(err)
		must(s.Change(&decode.Change{Op: decode.Insert, Rel: wide, After: decode.Tuple{text("3"), text("c"), text("30")}}))
	})
	m := load("t")
	if got := columns(m); !slices.Equal(got, []string{"id", "w", "x"}) {
		t.Fatalf("mirror columns after the rename and the add: %v, want [id w x]", got)
	}
	if got, want := scanStrings(t, m, "id", "w", "x"), []string{"1 a (null)", "2 b (null)", "3 c 30"}; !slices.Equal(got, want) {
		t.Errorf("mirror rows after the rename and the add: %q, want %q", got, want)
	}
	if got := attNumsOf(m); fmt.Sprint(got) != fmt.Sprint(map[int]string{1: "id", 2: "w", 3: "x"}) {
		t.Errorf("mirror attnums %v, want 1:id 2:w 3:x", got)
	}
	cl := load("t" + ChangelogSuffix)
	for _, side := range []string{colBefore, colAfter} {
		f, ok := cl.Schema().FindFieldByName(side + ".w")
		if !ok {
			t.Errorf("changelog has no %s.w after the rename", side)
		} else if _, old := cl.Schema().FindFieldByName(side + ".v"); old {
			t.Errorf("changelog keeps %s.v beside %s", side, f.Name)
		}
	}

	// ALTER TABLE t DROP CONSTRAINT t_pkey, ADD PRIMARY KEY (w): the
	// change's rows are applied with the old key, the mirror re-keyed at
	// the commit.
	tx(func() {
		_, err := s.DDL(ctx, event("ALTER TABLE", "t", col(1, "id", 20, false), col(2, "w", 25, true), col(3, "x", 23, false)))
		must(err)
	})
	m = load("t")
	if got := identifierNames(m.Schema()); !slices.Equal(got, []string{"w"}) {
		t.Fatalf("mirror key after the key change: %v, want [w]", got)
	}
	keyed := &decode.Relation{ID: rel.ID, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20}, {Name: "w", TypeOID: 25, Key: true}, {Name: "x", TypeOID: 23},
	}}
	tx(func() {
		_, err := s.Relation(ctx, keyed)
		must(err)
		must(s.Change(&decode.Change{Op: decode.Delete, Rel: keyed, Before: decode.Tuple{{Kind: decode.Null}, text("b"), {Kind: decode.Null}}, BeforeIsKey: true}))
	})
	if got, want := scanStrings(t, load("t"), "id", "w", "x"), []string{"1 a (null)", "3 c 30"}; !slices.Equal(got, want) {
		t.Errorf("mirror rows after a delete by the new key: %q, want %q", got, want)
	}

	// ALTER TABLE t RENAME TO u.
	renamed := *keyed // a relation message of its own, as decoded
	renamed.Name, renamed.Columns = "u", slices.Clone(keyed.Columns)
	tx(func() {
		_, err := s.Relation(ctx, &renamed)
		must(err)
	})
	for _, name := range []string{"t", "t" + ChangelogSuffix} {
		if _, err := cat.LoadTable(ctx, table.Identifier{"public", name}); err == nil {
			t.Errorf("public.%s is still there after the rename to u", name)
		}
	}
	if got, want := scanStrings(t, load("u"), "id", "w", "x"), []string{"1 a (null)", "3 c 30"}; !slices.Equal(got, want) {
		t.Errorf("public.u after the rename: %q, want %q", got, want)
	}

	// DROP TABLE u.
	tx(func() {
		_, err := s.DDL(ctx, &decode.DDLEvent{RelID: rel.ID, Tag: "DROP TABLE", Schema: "public", Table: "u", WholeRow: &yes})
		must(err)
	})
	if s.Has(rel.ID) {
		t.Error("the sink still has the dropped table")
	}
	for _, name := range []string{"u", "u" + ChangelogSuffix} {
		tbl := load(name)
		if _, ok := tbl.Properties()[PropDropped]; !ok {
			t.Errorf("kept table public.%s has no %s property", name, PropDropped)
		}
	}
}

// scanStrings reads columns of a table as sorted lines of their values.
func scanStrings(t *testing.T, tbl *table.Table, cols ...string) []string {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields(cols...)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	for r := range int(at.NumRows()) {
		line := ""
		for c := range int(at.NumCols()) {
			chunks := at.Column(c).Data().Chunks()
			i := r
			for _, ch := range chunks {
				if i < ch.Len() {
					if c > 0 {
						line += " "
					}
					line += ch.ValueStr(i)
					break
				}
				i -= ch.Len()
			}
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}
