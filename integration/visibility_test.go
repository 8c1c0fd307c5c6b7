package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// The walsender sends a transaction once its commit record is flushed,
// which can be before other sessions see it: PostgreSQL makes a commit
// visible only after it has written it (and, under synchronous
// replication, after the standby has it; the harness's server runs with
// synchronous_commit off, so the test's transactions ask for it). A catalog lookup the bridge
// makes for what the transaction did (the table it added to the
// publication) must wait until the transaction is visible, not take the
// table as gone. A synchronous standby that never answers holds the
// commit invisible for as long as the test needs.
func TestCommitNotYetVisible(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE later (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 5) g;
		INSERT INTO later SELECT g, 'l' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION vis_pub FOR TABLE a;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "vis_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_vis_pub", b)

	setSyncStandby(t, pg, conn, "ghost")
	released := false
	t.Cleanup(func() {
		if !released {
			setSyncStandby(t, pg, conn, "")
		}
	})
	done := make(chan error, 1)
	go func() {
		done <- pg.Exec(ctx, `BEGIN; SET LOCAL synchronous_commit = on; ALTER PUBLICATION vis_pub ADD TABLE later; INSERT INTO later VALUES (51, 'in the txn'); COMMIT;`)
	}()
	// The bridge has the transaction while nobody else sees it.
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(b.log(), `table=public.later`) && !strings.Contains(b.log(), `waiting for a received transaction to become visible`) {
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("the bridge did not get to the new table (running %v); log:\n%s", b.running(), tail(b.log(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(b.log(), "table gone or no longer published") {
		t.Fatalf("the new table was taken as gone before its transaction was visible:\n%s", tail(b.log(), 20))
	}
	var visible bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'vis_pub' AND tablename = 'later')`).Scan(&visible); err != nil {
		t.Fatal(err)
	}
	if visible {
		t.Fatal("the transaction is visible already: the synchronous standby did not hold it")
	}
	// The bridge keeps waiting, however long the commit takes to show.
	waitLog(t, b, "waiting for a received transaction to become visible")
	setSyncStandby(t, pg, conn, "")
	released = true
	if err := <-done; err != nil {
		t.Fatalf("the transaction adding the table: %v", err)
	}
	waitLog(t, b, `msg="table sync finished" table=public.later`)
	exec1(t, conn, `UPDATE later SET v = 'after' WHERE id = 7`)
	waitCaughtUp(t, conn, "pg2iceberg_vis_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), `msg="transaction visible"`) {
		t.Errorf("the bridge did not say it waited for the transaction:\n%s", tail(b.log(), 20))
	}
	if strings.Contains(b.log(), "table gone or no longer published") {
		t.Errorf("the new table was taken as gone:\n%s", tail(b.log(), 20))
	}
	compareRows(t, "pyiceberg", "later", "id", pyicebergRows(t, tg, "public.later"), pgRows(t, conn, "id::text AS id, v", "later"))
}

// setSyncStandby sets synchronous_standby_names. With a name, it returns
// once commits wait for that standby (a probe transaction hangs).
func setSyncStandby(t *testing.T, pg *harness.Postgres, conn *pgx.Conn, names string) {
	t.Helper()
	ctx := context.Background()
	exec1(t, conn, `ALTER SYSTEM SET synchronous_standby_names = '`+names+`'`)
	exec1(t, conn, `SELECT pg_reload_conf()`)
	if names == "" {
		return
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		probe := pgConn(t, pg)
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := probe.Exec(pctx, `BEGIN; SET LOCAL synchronous_commit = on; CREATE TEMP TABLE probe (x int); COMMIT`)
		cancel()
		probe.Close(ctx)
		if err != nil {
			return // the commit waited for the standby
		}
	}
	t.Fatal("commits do not wait for the synchronous standby")
}
