package bridge

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

// A maintenance commit that another writer's beat (here: an expiry on a
// table loaded before an append) is run again on the reloaded table, and
// the append stands.
func TestRetryCommitAfterConflict(t *testing.T) {
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	sc := icego.NewSchema(0, icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "t"}, sc, catalog.WithProperties(icego.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := range 4 {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(int64(i))
		rec := array.NewRecordBatch(asc, []arrow.Array{b.NewArray()}, 1)
		if tbl, err = tbl.AppendTable(ctx, array.NewTableFromRecords(asc, []arrow.RecordBatch{rec}), 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	stale := tbl
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(9)
	rec := array.NewRecordBatch(asc, []arrow.Array{b.NewArray()}, 1)
	if _, err := tbl.AppendTable(ctx, array.NewTableFromRecords(asc, []arrow.RecordBatch{rec}), 10, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the snapshots past the 1 ms retention below
	tries := 0
	out, err := retryCommit(ctx, cat, stale, func(t *table.Table) (*table.Table, error) {
		tries++
		out, _, err := tiering.ExpireSnapshots(ctx, t, tiering.Retention{MaxSnapshotAge: time.Millisecond, MinSnapshots: 1})
		return out, err
	})
	if err != nil || tries != 2 {
		t.Fatalf("retryCommit = %v after %d tries, want success on the second", err, tries)
	}
	if n := len(out.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots after the expiry, want 1", n)
	}
	got, err := out.Scan().ToArrowTable(ctx)
	if err != nil || got.NumRows() != 5 {
		t.Fatalf("table reads %v rows (%v), want 5: the other writer's append stands", got, err)
	}
}
