package tiering_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// newTable creates ns.t (id long) in a local warehouse under dir with a
// retention of 1 ms and keep snapshots at least.
func newTable(t *testing.T, dir, keep string) *table.Table {
	t.Helper()
	_, tbl := newTableCat(t, dir, keep)
	return tbl
}

// newTableCat is newTable with its catalog.
func newTableCat(t *testing.T, dir, keep string) (catalog.Catalog, *table.Table) {
	t.Helper()
	ctx := context.Background()
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
		tiering.PropMinSnapshotsToKeep: keep,
	}))
	if err != nil {
		t.Fatal(err)
	}
	return cat, tbl
}

// ids is a one-column Arrow table of the ids.
func ids(v ...int64) arrow.Table {
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(v, nil)
	rec := array.NewRecordBatch(asc, []arrow.Array{b.NewArray()}, int64(len(v)))
	return array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
}

// appendSnapshots commits n snapshots of one row each to tbl and waits
// until they are older than newTable's 1 ms retention.
func appendSnapshots(t *testing.T, tbl *table.Table, n int) *table.Table {
	t.Helper()
	for i := range n {
		var err error
		if tbl, err = tbl.AppendTable(context.Background(), ids(int64(i)), 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	return tbl
}

// Snapshots past the retention expire, the newest minimum is kept, and the
// table still reads; with nothing to expire no new metadata is committed.
func TestExpireSnapshots(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t, t.TempDir(), "3")
	tbl = appendSnapshots(t, tbl, 8)
	if n := len(tbl.Metadata().Snapshots()); n != 8 {
		t.Fatalf("%d snapshots before expiry, want 8", n)
	}
	out, left, err := tiering.ExpireSnapshots(ctx, tbl, tiering.Retention{})
	if err != nil || left != nil {
		t.Fatalf("expire: %v, left %v", err, left)
	}
	if n := len(out.Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots after expiry, want 3 (the minimum kept)", n)
	}
	if out.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatalf("current snapshot changed")
	}
	// Appends share their manifests and data files with the newer
	// snapshots: only the five expired manifest lists go.
	for i, s := range tbl.Metadata().Snapshots() {
		_, err := os.Stat(strings.TrimPrefix(s.ManifestList, "file://"))
		if expired := i < 5; expired != os.IsNotExist(err) {
			t.Errorf("snapshot %d (expired %v): manifest list %s: stat %v", i, expired, s.ManifestList, err)
		}
	}
	got, err := out.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumRows() != 8 {
		t.Fatalf("table reads %d rows after expiry, want 8", got.NumRows())
	}
	again, left, err := tiering.ExpireSnapshots(ctx, out, tiering.Retention{})
	if err != nil || left != nil {
		t.Fatalf("expire again: %v, left %v", err, left)
	}
	if again.MetadataLocation() != out.MetadataLocation() {
		t.Errorf("expiry with nothing to expire committed new metadata %s", again.MetadataLocation())
	}
}

// A file of an expired snapshot that cannot be deleted leaves the expiry
// committed and the other files deleted; Cleanup.Run deletes it later.
func TestExpireCleanupRetried(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := newTable(t, dir, "1")
	var err error
	for i := 0; i < 4; i++ {
		if tbl, err = tbl.AppendTable(ctx, ids(int64(i)), 10, nil); err != nil {
			t.Fatal(err)
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "wh", "ns.db", "t", "data", "*.parquet"))
	if err != nil || len(old) != 4 {
		t.Fatalf("data files %v (%v), want 4", old, err)
	}
	// The overwrite leaves the four files to the snapshots that expire.
	if tbl, err = tbl.OverwriteTable(ctx, ids(9), 10, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// A non-empty directory in its place: even root cannot remove it.
	stuck := old[0]
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, left, err := tiering.ExpireSnapshots(ctx, tbl, tiering.Retention{})
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if n := len(out.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots after expiry, want 1", n)
	}
	if left == nil || left.Err() == nil || !strings.Contains(left.Err().Error(), filepath.Base(stuck)) {
		t.Fatalf("expire: left %v, want the undeletable %s named", left, filepath.Base(stuck))
	}
	for _, f := range old[1:] {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s of an expired snapshot not deleted: %v", f, err)
		}
	}
	if err := os.Remove(filepath.Join(stuck, "keep")); err != nil {
		t.Fatal(err)
	}
	if err := left.Run(ctx, out); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := os.Stat(stuck); !os.IsNotExist(err) {
		t.Errorf("%s still there after the retry: %v", stuck, err)
	}
	got, err := out.Scan().ToArrowTable(ctx)
	if err != nil || got.NumRows() != 1 {
		t.Fatalf("table reads %v rows (%v), want 1", got, err)
	}
}

// A Schedule expires at its first commit and then not again within
// ExpireEvery, whatever the table has grown to meanwhile.
func TestScheduleAfterCommit(t *testing.T) {
	ctx := context.Background()
	cat, tbl := newTableCat(t, t.TempDir(), "2")
	tbl = appendSnapshots(t, tbl, 5)
	var s tiering.Schedule
	u := s.AfterCommit(ctx, cat, tbl)
	if u == nil || u.Table == nil || len(u.Failures) != 0 || u.GaveUp != 0 {
		t.Fatalf("first AfterCommit = %+v, want an expiry without failures", u)
	}
	if n := len(u.Table.Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots after the scheduled expiry, want 2", n)
	}
	tbl, err := u.Table.AppendTable(ctx, ids(9), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := s.AfterCommit(ctx, cat, tbl); u != nil {
		t.Errorf("AfterCommit right after an expiry = %+v, want nil (not due for %s)", u, tiering.ExpireEvery)
	}
}

// A running bridge's daily orphan cleanup: not at the first commit (files
// of commits in flight), not again within OrphansEvery, and then it
// removes the files no metadata names that are older than
// DefaultOrphanAge, keeping younger ones and the files kept by name.
func TestScheduleOrphansDaily(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, tbl := newTableCat(t, dir, "100")
	tbl = appendSnapshots(t, tbl, 2)
	loc := filepath.Join(dir, "wh", "ns.db", "t")
	plant := func(rel string, age time.Duration) string {
		p := filepath.Join(loc, rel)
		if err := os.WriteFile(p, []byte("orphan"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := plant("data/crashed-flush.parquet", tiering.DefaultOrphanAge+time.Hour)
	young := plant("data/in-flight.parquet", time.Hour)
	kept := plant("metadata/pg2iceberg-keyindex.bin", tiering.DefaultOrphanAge+time.Hour)
	s := tiering.Schedule{Keep: []string{"/metadata/pg2iceberg-keyindex.bin"}}
	if u := s.AfterCommit(ctx, cat, tbl); u == nil || u.Orphans != nil {
		t.Fatalf("first AfterCommit = %+v, want an expiry and no orphan cleanup", u)
	}
	s.OrphansRanAt(time.Now().Add(-tiering.OrphansEvery + time.Minute))
	if u := s.AfterCommit(ctx, cat, tbl); u != nil && u.Orphans != nil {
		t.Fatalf("AfterCommit within %s of the last cleanup ran one: %+v", tiering.OrphansEvery, u.Orphans)
	}
	s.OrphansRanAt(time.Now().Add(-tiering.OrphansEvery - time.Minute))
	u := s.AfterCommit(ctx, cat, tbl)
	if u == nil || u.Orphans == nil || len(u.Failures) != 0 {
		t.Fatalf("AfterCommit %s after the last cleanup = %+v, want an orphan cleanup without failures", tiering.OrphansEvery, u)
	}
	if u.Orphans.Removed != 1 || u.Orphans.RemovedBytes != 6 {
		t.Errorf("daily cleanup = %+v, want the one old orphan removed", *u.Orphans)
	}
	for p, want := range map[string]bool{old: false, young: true, kept: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: stat %v, want present %v", p, err, want)
		}
	}
	if u := s.AfterCommit(ctx, cat, u.Table); u != nil && u.Orphans != nil {
		t.Errorf("AfterCommit right after the daily cleanup ran another: %+v", u.Orphans)
	}
}
