package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// The sink applied to a keyed table's mirror, flush by flush: inserts,
// updates (one changing the key, one with an unchanged TOAST value),
// deletes and a TRUNCATE leave exactly the rows PostgreSQL would hold; the
// changelog has one row per change; the watermark is the last commit's
// end; an unchanged TOAST value of a row the mirror lacks is an error.
func TestSinkAppliesToMirror(t *testing.T) {
	ctx := context.Background()
	cat, s, rel := keyedSink(t)
	text := func(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }
	tuple := func(id int, v string) decode.Tuple { return decode.Tuple{text(fmt.Sprint(id)), text(v)} }
	toast := func(id int) decode.Tuple { return decode.Tuple{text(fmt.Sprint(id)), {Kind: decode.Unchanged}} }
	var end decode.LSN = 100
	var changes int
	tx := func(apply func() error) error {
		t.Helper()
		end += 100
		s.Begin(uint32(end), end-10, time.Now())
		if err := apply(); err != nil {
			return err
		}
		if _, _, err := s.Commit(ctx, end); err != nil {
			t.Fatal(err)
		}
		return s.Flush(ctx)
	}
	change := func(op decode.Op, before, after decode.Tuple) error {
		changes++
		return s.Change(&decode.Change{Op: op, Rel: rel, Before: before, BeforeIsKey: before != nil, After: after})
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		got := mirrorRows(t, cat, "t")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: mirror %v, want %v", when, got, want)
		}
		tbl, err := cat.LoadTable(ctx, table.Identifier{"public", "t"})
		if err != nil {
			t.Fatal(err)
		}
		if lsn, _, err := Watermark(tbl, ""); err != nil || lsn != end {
			t.Errorf("%s: mirror watermark %s (%v), want the last commit's end %s", when, lsn, err, end)
		}
	}

	must(tx(func() error {
		for id := 1; id <= 4; id++ {
			must(change(decode.Insert, nil, tuple(id, "v"+fmt.Sprint(id))))
		}
		return nil
	}))
	check("after the inserts", map[string]string{"1": "v1", "2": "v2", "3": "v3", "4": "v4"})
	must(tx(func() error {
		must(change(decode.Update, nil, tuple(1, "one")))          // in place
		must(change(decode.Update, tuple(2, ""), tuple(20, "v2"))) // the key changes
		must(change(decode.Update, nil, toast(3)))                 // v kept
		must(change(decode.Delete, tuple(4, ""), nil))
		must(change(decode.Insert, nil, tuple(5, "v5")))
		return nil
	}))
	check("after updates and a delete", map[string]string{"1": "one", "20": "v2", "3": "v3", "5": "v5"})
	must(tx(func() error {
		must(change(decode.Update, nil, tuple(3, "three")))
		changes++
		must(s.Truncate([]*decode.Relation{rel}))
		must(change(decode.Insert, nil, tuple(6, "after")))
		return nil
	}))
	check("after a TRUNCATE", map[string]string{"6": "after"})
	if n := changelogRows(t, cat, "t"); n != changes {
		t.Errorf("changelog holds %d rows, want %d (one per change and the TRUNCATE)", n, changes)
	}
	// An unchanged TOAST value of a row the mirror does not hold cannot be
	// filled in: the sink says so instead of writing a NULL.
	err := tx(func() error { return change(decode.Update, nil, toast(99)) })
	if !errors.Is(err, errNotInMirror) || !strings.Contains(err.Error(), "public.t") || !strings.Contains(err.Error(), "column v") {
		t.Errorf("unchanged TOAST value of a row not in the mirror: %v, want an error naming public.t, column v and the missing row", err)
	}
}

// keyedSink is a sink on a new local warehouse with one table, public.t
// (id int8 key, v text), copied empty (as --backfill=skip). The sink
// works through wrap(catalog) when wrap is given; the catalog returned is
// the warehouse's own.
func keyedSink(t *testing.T, wrap ...func(catalog.Catalog) catalog.Catalog) (catalog.Catalog, *Sink, *decode.Relation) {
	t.Helper()
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseCatalog(cat) })
	sinkCat := cat
	for _, w := range wrap {
		sinkCat = w(sinkCat)
	}
	s := NewSink(sinkCat, Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rel := &decode.Relation{ID: 7, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20, TypeName: "int8", Key: true, NotNull: true},
		{Name: "v", TypeOID: 25, TypeName: "text"},
	}}
	if err := s.AddTable(ctx, rel); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishCopy(ctx, rel.ID, 0); err != nil {
		t.Fatal(err)
	}
	return cat, s, rel
}

// mirrorRows reads a mirror of public as id → v.
func mirrorRows(t *testing.T, cat catalog.Catalog, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"public", name})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("id", "v")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[string]string{}
	ids, vs := at.Column(0).Data().Chunks(), at.Column(1).Data().Chunks()
	for c := range ids {
		for r := range ids[c].Len() {
			out[ids[c].ValueStr(r)] = vs[c].ValueStr(r)
		}
	}
	return out
}

// changelogRows counts the rows of public.<name>__changelog.
func changelogRows(t *testing.T, cat catalog.Catalog, name string) int {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"public", name + ChangelogSuffix})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return int(at.NumRows())
}
