package tiering_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Snapshots past the retention expire, the newest minimum is kept, and the
// table still reads; with nothing to expire no new metadata is committed.
func TestExpireSnapshots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: filepath.Join(dir, "wh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	sc := icego.NewSchema(0, icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "t"}, sc, catalog.WithProperties(icego.Properties{
		"format-version":               "2",
		tiering.PropMaxSnapshotAgeMs:   "1",
		tiering.PropMinSnapshotsToKeep: "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := 0; i < 8; i++ {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(int64(i))
		col := b.NewArray()
		rec := array.NewRecordBatch(asc, []arrow.Array{col}, 1)
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		if tbl, err = tbl.AppendTable(ctx, at, 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	if n := len(tbl.Metadata().Snapshots()); n != 8 {
		t.Fatalf("%d snapshots before expiry, want 8", n)
	}
	out, err := tiering.ExpireSnapshots(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots after expiry, want 3 (the minimum kept)", n)
	}
	if out.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatalf("current snapshot changed")
	}
	got, err := out.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumRows() != 8 {
		t.Fatalf("table reads %d rows after expiry, want 8", got.NumRows())
	}
	again, err := tiering.ExpireSnapshots(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if again.MetadataLocation() != out.MetadataLocation() {
		t.Errorf("expiry with nothing to expire committed new metadata %s", again.MetadataLocation())
	}
}
