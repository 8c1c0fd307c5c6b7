package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"
)

// An outside job rewrites the mirror's rows into a file of its own and
// expires the old snapshots, deleting the files the bridge's key index
// points at (what Spark's rewrite_data_files then expire_snapshots do),
// while the bridge runs. The next UPDATE that leaves a TOAST value
// unchanged needs that value from the mirror: the bridge must not exit on
// the missing file; it notices the outside commit, rebuilds its key index
// from the table as it is and reads the value from the new file. The
// mirror equals PostgreSQL and the changelog holds each change once.
func TestOutsideRewriteUnchangedToast(t *testing.T) {
	t.Parallel()
	conn, tg, b := startDocs(t)
	for i := range 3 { // three flushes: three data files
		exec1(t, conn, "INSERT INTO docs SELECT g, 0, "+bigBody+" FROM generate_series($1::int, $1::int + 4) g", i*5+1)
		waitCaughtUp(t, conn, docsSlot, b)
	}

	var gone []string
	withCatalog(t, tg, func(ctx context.Context, cat catalog.Catalog) {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"public", "docs"})
		if err != nil {
			t.Fatal(err)
		}
		gone = dataFiles(t, tbl)
		if len(gone) != 3 {
			t.Fatalf("the mirror has %d data files, want 3", len(gone))
		}
		live, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Release()
		rdr := array.NewTableReader(live, 1024)
		defer rdr.Release()
		txn := tbl.NewTransaction()
		if err := txn.Overwrite(ctx, rdr, nil); err != nil {
			t.Fatalf("overwrite docs: %v", err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatalf("commit the overwrite: %v", err)
		}
		txn = tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatalf("expire the snapshots of docs: %v", err)
		}
	})
	for _, p := range gone {
		if fileExists(strings.TrimPrefix(p, "file://")) {
			t.Fatalf("expiry left %s; the test needs the old files gone", p)
		}
	}

	exec1(t, conn, "UPDATE docs SET n = n + 1 WHERE id IN (2, 7, 12)")
	exec1(t, conn, "UPDATE docs SET n = n + 10 WHERE id = 7")
	waitCaughtUp(t, conn, docsSlot, b)
	checkDocs(t, tg, conn, "id::text AS id, n::text AS n, md5(body) AS body")
	for _, id := range []int{2, 7, 12} {
		want := pgMD5(t, conn, id)
		for _, c := range docChanges(t, tg, id) {
			if c.body != want {
				t.Errorf("changelog of id %d has body %s, want %s (%+v)", id, c.body, want, c)
			}
		}
	}
	if n := len(docChanges(t, tg, 7)); n != 2 {
		t.Errorf("changelog has %d updates of id 7, want 2", n)
	}
	if !strings.Contains(b.log(), `msg="key index stale after an outside commit; restarting from the durable position"`) {
		t.Errorf("no restart after the stale read-back:\n%s", tail(b.log(), 30))
	}
	b.stop(t)
}

// A data file the current snapshot still refers to, deleted by hand (a
// damaged warehouse, not an outside commit): the read-back of an unchanged
// TOAST value from it cannot succeed by retrying. The bridge exits with an
// error that names the file and the way out, instead of restarting again
// and again as if its connection were lost.
func TestMissingDataFileUnchangedToast(t *testing.T) {
	t.Parallel()
	conn, tg, b := startDocs(t)
	exec1(t, conn, "INSERT INTO docs SELECT g, 0, "+bigBody+" FROM generate_series(1, 5) g")
	waitCaughtUp(t, conn, docsSlot, b)
	files := dataFiles(t, icegoTable(t, tg, "public.docs"))
	if len(files) != 1 {
		t.Fatalf("the mirror has %d data files, want 1", len(files))
	}
	files[0] = strings.TrimPrefix(files[0], "file://")
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, "UPDATE docs SET n = 1 WHERE id = 3")
	b.exited(t, time.Minute)
	log := b.log()
	if b.err == nil || strings.Contains(log, "restarting from the durable position") ||
		!strings.Contains(log, files[0]) || !strings.Contains(log, "pg2iceberg backfill --table public.docs") {
		t.Fatalf("bridge exited with %v, want an error naming the missing file and the backfill; log:\n%s", b.err, tail(log, 20))
	}
}

const docsSlot = "pg2iceberg_docs_pub"

// startDocs starts a source with toastDocs and a bridge streaming it with
// its own compaction off (the tests need the files as the flushes wrote
// them).
func startDocs(t *testing.T) (*pgx.Conn, target, *bridge) {
	t.Helper()
	pg, conn := startSource(t, toastDocs)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "docs_pub", tg, "--config", noCompaction(t, "public.docs"))...)
	waitSlot(t, conn, docsSlot, b)
	return conn, tg, b
}

// dataFiles returns the data files of tbl's current snapshot.
func dataFiles(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	var out []string
	for p, content := range snapshotFiles(t, tbl, true) {
		if content == icego.EntryContentData {
			out = append(out, p)
		}
	}
	return out
}
