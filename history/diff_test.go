package history

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// rowsTable is an arrow table of (id, v) rows.
func rowsTable(rows ...[2]any) arrow.Table {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(r[0].(int)))
		b.Field(1).(*array.StringBuilder).Append(r[1].(string))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// diffText is a diff as "kind id:v->id:v" lines, sorted.
func diffText(t *testing.T, tbl *table.Table, from, to int64) string {
	t.Helper()
	d, err := Diff(context.Background(), tbl, Point{Kind: Snapshot, ID: from}, Point{Kind: Snapshot, ID: to})
	if err != nil {
		t.Fatalf("Diff(%d, %d): %v", from, to, err)
	}
	cell := func(cs []Cell) string {
		if cs == nil {
			return "-"
		}
		return fmt.Sprintf("%v:%v", cs[0].JSON, cs[1].JSON)
	}
	var out []string
	for _, c := range d.Changes {
		out = append(out, fmt.Sprintf("%s %s->%s", c.Kind, cell(c.Before), cell(c.After)))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// A diff on real files: rows rewritten unchanged (an overwrite, as a
// compaction does) are no change, position deletes are deletions, and a
// key rewritten with other values is an update.
func TestDiffFiles(t *testing.T) {
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := icego.NewSchemaWithIdentifiers(0, []int{1},
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true},
		icego.NestedField{ID: 2, Name: "v", Type: icego.PrimitiveTypes.String})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"shop", "t"}, sc, catalog.WithProperties(icego.Properties{
		"format-version": "2", table.WriteDeleteModeKey: table.WriteModeMergeOnRead}))
	if err != nil {
		t.Fatal(err)
	}
	step := func(f func(*table.Table) (*table.Table, error)) int64 {
		t.Helper()
		out, err := f(tbl)
		if err != nil {
			t.Fatal(err)
		}
		tbl = out
		return tbl.CurrentSnapshot().SnapshotID
	}
	a := step(func(t *table.Table) (*table.Table, error) {
		return t.AppendTable(ctx, rowsTable([2]any{1, "a"}, [2]any{2, "b"}, [2]any{3, "c"}), 10, nil)
	})
	b := step(func(t *table.Table) (*table.Table, error) { // the same rows in a new file
		return t.OverwriteTable(ctx, rowsTable([2]any{1, "a"}, [2]any{2, "b"}, [2]any{3, "c"}), 10, nil)
	})
	c := step(func(t *table.Table) (*table.Table, error) {
		return t.Delete(ctx, icego.EqualTo(icego.Reference("id"), int64(1)), nil)
	})
	if got := tbl.CurrentSnapshot().Summary.Properties["added-position-deletes"]; got != "1" {
		t.Fatalf("the delete of id 1 wrote %q position deletes, want 1 (merge-on-read)", got)
	}
	d := step(func(t *table.Table) (*table.Table, error) {
		return t.AppendTable(ctx, rowsTable([2]any{4, "d"}), 10, nil)
	})
	e := step(func(t *table.Table) (*table.Table, error) {
		return t.OverwriteTable(ctx, rowsTable([2]any{2, "B"}, [2]any{3, "c"}, [2]any{4, "d"}), 10, nil)
	})
	for _, tc := range []struct {
		from, to int64
		want     string
	}{
		{a, a, ""},
		{a, b, ""},
		{b, c, "deleted 1:a->-"},
		{a, d, "deleted 1:a->-, inserted -->4:d"},
		{c, e, "inserted -->4:d, updated 2:b->2:B"},
		{a, e, "deleted 1:a->-, inserted -->4:d, updated 2:b->2:B"},
	} {
		if got := diffText(t, tbl, tc.from, tc.to); got != tc.want {
			t.Errorf("diff %d..%d = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
	if _, err := Diff(ctx, tbl, Point{Kind: Snapshot, ID: e}, Point{Kind: Snapshot, ID: a}); err == nil || !strings.Contains(err.Error(), "is not an ancestor") {
		t.Errorf("Diff(newer, older) error = %v, want one saying it is not an ancestor", err)
	}
}
