package rest_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// loadTable with snapshots=refs returns only the snapshots a branch or tag
// points at, and every load lists the refs.
func TestLoadTableSnapshotsRefs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	first := f.table.CurrentSnapshot().SnapshotID
	tbl := f.table
	for i := 0; i < 2; i++ {
		tbl = appendRow(t, tbl, int64(10+i))
	}
	middle := *tbl.CurrentSnapshot().ParentSnapshotID
	last := tbl.CurrentSnapshot().SnapshotID
	if _, _, err := f.cat.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{table.NewSetSnapshotRefUpdate("v1", first, table.TagRef, 0, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	ts := f.server(t, "")
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{first, middle, last}},
		{"?snapshots=all", []int64{first, middle, last}},
		{"?snapshots=refs", []int64{first, last}},
	} {
		status, _, body := do(t, "GET", ts.URL+"/v1/pg2iceberg/namespaces/shop/tables/orders"+tc.query, "")
		if status != 200 {
			t.Fatalf("load table%s = %d %s", tc.query, status, body)
		}
		var resp struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		meta, err := table.ParseMetadataBytes(resp.Metadata)
		if err != nil {
			t.Fatalf("load table%s: parse metadata: %v", tc.query, err)
		}
		var got []int64
		for _, s := range meta.Snapshots() {
			got = append(got, s.SnapshotID)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("load table%s: snapshots %v, want %v", tc.query, got, want)
		}
		refs := map[string]int64{}
		for name, ref := range meta.Refs() {
			refs[name] = ref.SnapshotID
		}
		if refs["v1"] != first || refs["main"] != last || len(refs) != 2 {
			t.Errorf("load table%s: refs %v, want main at %d and v1 at %d", tc.query, refs, last, first)
		}
		if meta.CurrentSnapshot() == nil || meta.CurrentSnapshot().SnapshotID != last {
			t.Errorf("load table%s: current snapshot %v, want %d", tc.query, meta.CurrentSnapshot(), last)
		}
	}
}

// appendRow commits one more row to tbl in a snapshot of its own.
func appendRow(t *testing.T, tbl *table.Table, id int64) *table.Table {
	t.Helper()
	return appendRowWith(t, tbl, id, nil)
}

// appendRowWith is appendRow with the snapshot's summary properties.
func appendRowWith(t *testing.T, tbl *table.Table, id int64, props icego.Properties) *table.Table {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	b.Field(1).(*array.StringBuilder).Append("new")
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := tbl.AppendTable(context.Background(), at, 10, props)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
