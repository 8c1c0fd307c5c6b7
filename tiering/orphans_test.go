package tiering_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Past MaxManifests data manifests a rewrite leaves few, and the table
// reads the same rows.
func TestRewriteManifests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl := newTable(t, t.TempDir(), "100")
	tbl = appendSnapshots(t, tbl, tiering.MaxManifests)
	out, r, err := tiering.RewriteManifests(ctx, tbl, 0, false)
	if err != nil || r.Rewritten || out != tbl {
		t.Fatalf("rewrite at %d manifests = %+v, %v; want nothing due", tiering.MaxManifests, r, err)
	}
	tbl = appendSnapshots(t, tbl, 1)
	if _, r, err = tiering.RewriteManifests(ctx, tbl, 0, true); err != nil || !r.Rewritten || r.After != r.Before {
		t.Fatalf("dry rewrite = %+v, %v; want due and nothing done", r, err)
	}
	out, r, err = tiering.RewriteManifests(ctx, tbl, 0, false)
	if err != nil || !r.Rewritten || r.Before != tiering.MaxManifests+1 || r.After != 1 {
		t.Fatalf("rewrite = %+v, %v; want %d manifests into 1", r, err, tiering.MaxManifests+1)
	}
	if n, _, err := tiering.CountManifests(ctx, out); err != nil || n != 1 {
		t.Fatalf("%d manifests after the rewrite (%v), want 1", n, err)
	}
	got, err := out.Scan().ToArrowTable(ctx)
	if err != nil || got.NumRows() != tiering.MaxManifests+1 {
		t.Fatalf("table reads %v rows (%v), want %d", got, err, tiering.MaxManifests+1)
	}
}

// Only unreferenced files old enough are orphans; the files kept by name
// and everything the metadata names stay.
func TestRemoveOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	tbl := appendSnapshots(t, newTable(t, dir, "100"), 3)
	loc := filepath.Join(dir, "wh", "ns.db", "t")
	old := time.Now().Add(-time.Hour)
	plant := func(rel string, age time.Time) string {
		p := filepath.Join(loc, rel)
		if err := os.WriteFile(p, []byte("orphan"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	orphan := plant("data/stray.parquet", old)
	young := plant("data/young.parquet", time.Now())
	kept := plant("metadata/pg2iceberg-keyindex.bin", old)
	opts := tiering.OrphanOptions{OlderThan: time.Minute, Keep: []string{"/metadata/pg2iceberg-keyindex.bin"}, DryRun: true}
	o, err := tiering.RemoveOrphans(ctx, tbl, opts)
	if err != nil || o.Found != 1 || o.Removed != 0 || o.FoundBytes != 6 {
		t.Fatalf("dry run = %+v, %v; want the one old orphan found", o, err)
	}
	opts.DryRun = false
	if o, err = tiering.RemoveOrphans(ctx, tbl, opts); err != nil || o.Removed != 1 || o.RemovedBytes != 6 {
		t.Fatalf("cleanup = %+v, %v; want one removed", o, err)
	}
	for p, want := range map[string]bool{orphan: false, young: true, kept: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: stat %v, want present %v", p, err, want)
		}
	}
	got, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil || got.NumRows() != 3 {
		t.Fatalf("table reads %v rows (%v), want 3", got, err)
	}
}

// A lease written is read back fresh; removed, none is left.
func TestLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wh := "file://" + t.TempDir()
	fsys := icebergio.LocalFS{}
	if ls, err := tiering.ReadLeases(ctx, fsys, wh); err != nil || len(ls) != 0 {
		t.Fatalf("leases of an empty warehouse = %v, %v", ls, err)
	}
	if err := tiering.WriteLease(fsys, wh, "s1"); err != nil {
		t.Fatal(err)
	}
	ls, err := tiering.ReadLeases(ctx, fsys, wh)
	if err != nil || len(ls) != 1 || ls[0].Slot != "s1" || !ls[0].Fresh(time.Now()) || ls[0].Fresh(time.Now().Add(tiering.LeaseTTL)) {
		t.Fatalf("leases = %+v, %v; want s1's, fresh now and stale after LeaseTTL", ls, err)
	}
	if err := tiering.RemoveLease(fsys, wh, "s1"); err != nil {
		t.Fatal(err)
	}
	if ls, err = tiering.ReadLeases(ctx, fsys, wh); err != nil || !slices.Equal(ls, nil) {
		t.Fatalf("leases after the removal = %v, %v", ls, err)
	}
}
