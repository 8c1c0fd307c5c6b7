package tiering_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// A tagged snapshot survives an expiry that keeps one snapshot, with the
// files it reads; the files only expired snapshots referenced are deleted.
func TestExpireKeepsTagged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cat, tbl := newTableCat(t, dir, "1")
	tbl = appendSnapshots(t, tbl, 4)
	tagged := tbl.Metadata().Snapshots()[1].SnapshotID // reads rows 0 and 1
	if _, _, err := cat.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", tagged, table.TagRef, -1, -1, -1),
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	data, err := filepath.Glob(filepath.Join(dir, "wh", "ns.db", "t", "data", "*.parquet"))
	if err != nil || len(data) != 4 {
		t.Fatalf("data files %v (%v), want 4", data, err)
	}
	if tbl, err = tbl.OverwriteTable(ctx, ids(9), 10, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // past the 1 ms retention
	out, left, err := tiering.ExpireSnapshots(ctx, tbl, tiering.Retention{})
	if err != nil || left != nil {
		t.Fatalf("expire: %v, left %v", err, left)
	}
	var kept []int64
	for _, s := range out.Metadata().Snapshots() {
		kept = append(kept, s.SnapshotID)
	}
	if want := []int64{tagged, tbl.CurrentSnapshot().SnapshotID}; len(kept) != 2 || kept[0] != want[0] || kept[1] != want[1] {
		t.Fatalf("snapshots kept %v, want the tagged and the current %v", kept, want)
	}
	rows, err := out.Scan(table.WithSnapshotID(tagged)).ToArrowTable(ctx)
	if err != nil || rows.NumRows() != 2 {
		t.Fatalf("the tagged snapshot reads %v rows (%v), want 2", rows, err)
	}
	present := 0
	for _, f := range data {
		if _, err := os.Stat(f); err == nil {
			present++
		}
	}
	// Which two of the four files the tag reads is not in their names:
	// count them. The overwrite's own file is a fifth.
	if present != 2 {
		t.Errorf("%d of the 4 appended data files left, want the tagged snapshot's 2", present)
	}
}

// A configured retention overrides the table's properties.
func TestRetentionOverride(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl := newTable(t, t.TempDir(), "1")
	tbl = appendSnapshots(t, tbl, 6)
	out, _, err := tiering.ExpireSnapshots(ctx, tbl, tiering.Retention{MinSnapshots: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata().Snapshots()); n != 4 {
		t.Errorf("%d snapshots after an expiry keeping 4, want 4", n)
	}
	out, _, err = tiering.ExpireSnapshots(ctx, out, tiering.Retention{MaxSnapshotAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata().Snapshots()); n != 4 {
		t.Errorf("%d snapshots after an expiry of snapshots older than an hour, want 4 (all younger)", n)
	}
	if err := (tiering.Retention{MinSnapshots: -1}).Validate(); err == nil {
		t.Error("Validate accepts min snapshots -1")
	}
}
