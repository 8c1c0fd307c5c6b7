package integration

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// An outside job that rewrites a table's manifests and then expires every
// snapshot but the last (Spark's expire_snapshots with retain_last 1)
// leaves no snapshot of the bridge's in the table's history, so the
// history no longer says which source transactions the table holds. The
// bridge killed after a commit and before its acknowledgement must still
// skip, at its restart, the transactions that commit put in: the mirror
// equals PostgreSQL and the changelog has each change once.
func TestOutsideExpiryKeepsWatermark(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 10) g;
		CREATE PUBLICATION ox_pub FOR TABLE t;`)
	tg := localTarget(t)
	const slot = "pg2iceberg_ox_pub"
	args := runArgs(pg, "ox_pub", tg)
	b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=after-commit:2"}, args...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, "INSERT INTO t SELECT g, 'first' FROM generate_series(11, 15) g")
	waitCommittedOrExit(t, conn, slot, b)
	exec1(t, conn, "INSERT INTO t SELECT g, 'second' FROM generate_series(16, 20) g")
	exec1(t, conn, "UPDATE t SET v = 'updated' WHERE id <= 3")
	b.crashed(t, time.Minute)

	// The outside job, on both tables, while the bridge is down.
	withCatalog(t, tg, func(ctx context.Context, cat catalog.Catalog) {
		for _, name := range []string{"t", "t__changelog"} {
			tbl, err := cat.LoadTable(ctx, table.Identifier{"public", name})
			if err != nil {
				t.Fatal(err)
			}
			txn := tbl.NewTransaction()
			res, err := txn.RewriteManifests(ctx)
			if err != nil {
				t.Fatalf("rewrite the manifests of %s: %v", name, err)
			}
			if res.NoOpReason != table.NoOpNone {
				t.Fatalf("rewrite the manifests of %s: nothing to do (%s); the test needs an outside snapshot", name, res.NoOpReason)
			}
			if tbl, err = txn.Commit(ctx); err != nil {
				t.Fatalf("commit the manifest rewrite of %s: %v", name, err)
			}
			txn = tbl.NewTransaction()
			if err := txn.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
				t.Fatal(err)
			}
			if tbl, err = txn.Commit(ctx); err != nil {
				t.Fatalf("expire the snapshots of %s: %v", name, err)
			}
			if n := len(tbl.Metadata().Snapshots()); n != 1 {
				t.Fatalf("%s keeps %d snapshots after the expiry, want 1", name, n)
			}
			if s := tbl.CurrentSnapshot(); s.Summary != nil && s.Summary.Properties["pg2iceberg.lsn"] != "" {
				t.Fatalf("%s: the outside snapshot carries the bridge's watermark; the test needs one that does not", name)
			}
		}
	})

	b = startBridge(t, nil, args...)
	waitCaughtUp(t, conn, slot, b)
	exec1(t, conn, "INSERT INTO t VALUES (21, 'after the restart')")
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	want := pgRows(t, conn, "id, v", "public.t")
	compareRows(t, "iceberg-go", "public.t", "id", icegoRows(t, tg, "public.t"), want)
	checkChangelog(t, tg, "public.t", 5+5+3+1)
}
