package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// A snapshot expiry whose file cleanup fails (here: the expired snapshot's
// manifest list cannot be read or removed) does not stop the bridge: the
// data commit stands, the failure is logged and counted, the stream goes on.
func TestExpiryFailureKeepsStreaming(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
		CREATE PUBLICATION ex_pub FOR TABLE t;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	run := runArgs(pg, "ex_pub", tg, "--metrics-addr", addr)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ex_pub", b)
	for i := 0; i < 3; i++ {
		exec1(t, conn, `UPDATE t SET v = v || 'a' WHERE id % 3 = $1`, i)
		waitCaughtUp(t, conn, "pg2iceberg_ex_pub", b)
	}
	b.stop(t)

	tbl := loadTable(t, tg, "public.t")
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{tiering.PropMaxSnapshotAgeMs: "1", tiering.PropMinSnapshotsToKeep: "1"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err := txn.Commit(context.Background()); err != nil || len(tbl.Metadata().Snapshots()) < 3 {
		t.Fatalf("set retention: %v", err)
	}
	oldest := tbl.Metadata().Snapshots()[0].ManifestList
	path := strings.TrimPrefix(oldest, "file://")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ex_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'after' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_ex_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'later' WHERE id > 90`)
	waitCaughtUp(t, conn, "pg2iceberg_ex_pub", b)
	_, metrics := httpGet(t, "http://"+addr+"/metrics", "")
	b.stop(t)
	if !strings.Contains(b.log(), "snapshot expiry failed") || !strings.Contains(b.log(), "table=public.t ") {
		t.Errorf("no warning about the failed expiry of public.t:\n%s", tail(b.log(), 10))
	}
	if !strings.Contains(metrics, "pg2iceberg_expire_failures_total 1\n") {
		t.Errorf("/metrics does not count one expiry failure:\n%s", metrics)
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t"))
}
