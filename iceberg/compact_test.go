package iceberg

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// CompactOnce merges a table's small files with their position deletes
// applied: the rows read the same, the files are fewer, and a second run
// finds nothing due.
func TestCompactOnce(t *testing.T) {
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := icego.NewSchema(0, icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true})
	ident := table.Identifier{"shop", "t"}
	tbl, err := cat.CreateTable(ctx, ident, sc, catalog.WithProperties(icego.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 5; i++ {
		rows := repairRows(i*10, i*10+1, i*10+2)
		tbl, err = tbl.AppendTable(ctx, rows, 10, nil)
		rows.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Delete row 1 of the first two files (ids 1 and 11, in either order).
	data, _, _, err := snapshotFiles(tbl, mustFS(t, tbl))
	if err != nil {
		t.Fatal(err)
	}
	var dels []posDelete
	for _, df := range data[:2] {
		dels = append(dels, posDelete{path: df.FilePath(), pos: 1})
	}
	sortDeletes(dels)
	fs := mustFS(t, tbl)
	ddf, err := writePositionDeletes(ctx, fs, dataPath(tbl, ""), tbl.Schema(), tbl.Spec(), nil, dels, parquetx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(ddf).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := scanIDs(t, tbl)
	if len(want) != 13 {
		t.Fatalf("before compaction %d rows, want 13", len(want))
	}

	rep, err := CompactOnce(ctx, cat, ident, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DataFilesBefore != 5 || rep.DeleteFilesBefore != 1 || rep.DataFilesAfter != 1 || rep.DeleteFilesAfter != 0 || rep.FilesRewritten != 5 {
		t.Errorf("CompactOnce = %+v, want 5 data + 1 delete files before, 1 + 0 after, 5 rewritten", rep)
	}
	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, after); !slices.Equal(got, want) {
		t.Errorf("after compaction ids %v, want %v", got, want)
	}
	if rep, err := CompactOnce(ctx, cat, ident, CompactOptions{Force: true}); err != nil || rep.Skipped == "" {
		t.Errorf("second CompactOnce = %+v, %v; want nothing due", rep, err)
	}
}

func mustFS(t *testing.T, tbl *table.Table) icebergio.WriteFileIO {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fs.(icebergio.WriteFileIO)
}

func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var ids []int64
	for _, ch := range at.Column(0).Data().Chunks() {
		ids = append(ids, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	return ids
}
