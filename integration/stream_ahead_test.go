package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Large transactions arrive streamed (logical_decoding_work_mem is 64kB
// here) and are applied while they stream, ahead of their commit, with
// small transactions on the same tables committing between their segments.
// A transaction whose subtransaction rolls back after its changes streamed,
// and one that aborts, are given up ahead and applied (or not) at their end
// from the spool. Afterwards mirrors equal PostgreSQL and the changelog has
// every change of each transaction once, with its commit LSN and time: read
// by pyiceberg, iceberg-go and DuckDB.
func TestStreamedTransactionAhead(t *testing.T) {
	t.Parallel()
	pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE big (id int PRIMARY KEY, v text, n bigint);
		CREATE TABLE small (id int PRIMARY KEY, v text);
		INSERT INTO big SELECT g, 'old ' || g, g FROM generate_series(1, 20000) g;
		CREATE PUBLICATION big_pub FOR TABLE big, small;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "big_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_big_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)

	// Small transactions on rows the large ones leave alone.
	var loadChanges atomic.Int64
	stop := writeLoad(t, pg, 10*time.Millisecond, func(ctx context.Context, c *pgx.Conn, i int) error {
		if _, err := c.Exec(ctx, "INSERT INTO big VALUES ($1::int, 'load', $1::bigint)", 900_000+i); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "UPDATE big SET v = 'load ' || $1::int WHERE id = $2::int", i, 15000+i%5000); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "INSERT INTO small VALUES ($1, 'x')", i); err != nil {
			return err
		}
		loadChanges.Add(2)
		return nil
	})

	// bigTx runs stmts in one transaction with pauses between them, so that
	// the load's transactions commit between its streamed segments.
	bigTx := func(end string, stmts ...string) (xid int64, changes int64) {
		t.Helper()
		xid, tags := runTx(t, conn, end, func() { waitLoadCommits(t, &loadChanges, 2) }, stmts...)
		for _, tag := range tags {
			changes += rowChanges(tag)
		}
		return xid, changes
	}
	ahead1, n1 := bigTx("COMMIT",
		"INSERT INTO big SELECT g, 'new ' || g, g FROM generate_series(100001, 160000) g",
		"UPDATE big SET v = 'upd ' || id, n = -n WHERE id <= 5000",
		"DELETE FROM big WHERE id BETWEEN 5001 AND 7000",
		"UPDATE big SET v = 'twice' WHERE id BETWEEN 100001 AND 110000",
		"DELETE FROM big WHERE id BETWEEN 110001 AND 115000",
		"UPDATE big SET id = id + 500000 WHERE id BETWEEN 7001 AND 7100")
	rolledBack, n2 := bigTx("COMMIT",
		"INSERT INTO big SELECT g, 'sp', g FROM generate_series(200001, 230000) g",
		"SAVEPOINT a",
		"INSERT INTO big SELECT g, 'gone', g FROM generate_series(230001, 260000) g",
		"ROLLBACK TO SAVEPOINT a",
		"INSERT INTO big SELECT g, 'after', g FROM generate_series(260001, 270000) g")
	n2 -= 30000 // the rolled-back insert
	aborted, _ := bigTx("ROLLBACK", "INSERT INTO big SELECT g, 'aborted', g FROM generate_series(300001, 340000) g")
	ahead2, n4 := bigTx("COMMIT", "UPDATE big SET n = n + 1 WHERE id BETWEEN 120001 AND 150000")
	stop()
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
	b.stop(t)

	log := b.log()
	for _, xid := range []int64{ahead1, ahead2} {
		if !strings.Contains(log, fmt.Sprintf(`msg="streamed transaction applied ahead" xid=%d `, xid)) {
			t.Errorf("transaction %d was not applied ahead; log:\n%s", xid, tail(log, 30))
		}
	}
	for _, xid := range []int64{rolledBack, aborted} {
		if !strings.Contains(log, fmt.Sprintf(`msg="streamed transaction will be applied at its commit" xid=%d `, xid)) {
			t.Errorf("transaction %d (a rollback in it) was not given up ahead; log:\n%s", xid, tail(log, 30))
		}
	}

	for _, tc := range []struct{ table, sel string }{{"public.big", "id, v, n"}, {"public.small", "id, v"}} {
		want := pgRows(t, conn, tc.sel, tc.table)
		compareRows(t, "iceberg-go", tc.table, "id", icegoRows(t, tg, tc.table), want)
		compareRows(t, "pyiceberg", tc.table, "id", pyicebergRows(t, tg, tc.table), want)
	}

	// The changelog: every change once; a transaction's rows share its
	// commit LSN and time, with seq 1..n.
	changes := pyicebergRows(t, tg, "public.big__changelog")
	type txRows struct {
		n         int64
		lsn, ts   map[string]bool
		seqs      map[string]bool
		rolledOut int
	}
	byXID := map[int64]*txRows{}
	for _, r := range changes {
		xid, err := strconv.ParseInt(fmt.Sprint(r["xid"]), 10, 64)
		if err != nil {
			t.Fatalf("changelog xid %v: %v", r["xid"], err)
		}
		x := byXID[xid]
		if x == nil {
			x = &txRows{lsn: map[string]bool{}, ts: map[string]bool{}, seqs: map[string]bool{}}
			byXID[xid] = x
		}
		x.n++
		x.lsn[fmt.Sprint(r["lsn"])] = true
		x.ts[fmt.Sprint(r["commit_ts"])] = true
		x.seqs[fmt.Sprint(r["seq"])] = true
		if after, ok := r["after"].(map[string]any); ok && (after["v"] == "gone" || after["v"] == "aborted") {
			x.rolledOut++
		}
	}
	var loadRows int64
	for xid, x := range byXID {
		if xid != ahead1 && xid != rolledBack && xid != ahead2 {
			loadRows += x.n
		}
	}
	if loadRows != loadChanges.Load() {
		t.Errorf("changelog has %d rows of the small transactions, want %d", loadRows, loadChanges.Load())
	}
	for _, tc := range []struct {
		name string
		xid  int64
		want int64
	}{{"applied ahead", ahead1, n1}, {"with a rolled-back savepoint", rolledBack, n2}, {"aborted", aborted, 0}, {"applied ahead after those", ahead2, n4}} {
		x := byXID[tc.xid]
		if x == nil {
			x = &txRows{}
		}
		if x.n != tc.want || int64(len(x.seqs)) != tc.want || x.rolledOut > 0 {
			t.Errorf("transaction %s (%d): %d changelog rows, %d distinct seq, %d rolled-back rows; want %d, %d, 0", tc.name, tc.xid, x.n, len(x.seqs), x.rolledOut, tc.want, tc.want)
		}
		if tc.want > 0 && (len(x.lsn) != 1 || len(x.ts) != 1) {
			t.Errorf("transaction %s (%d): rows carry %d commit LSNs and %d commit times, want 1 each", tc.name, tc.xid, len(x.lsn), len(x.ts))
		}
		t.Logf("transaction %s (%d): %d changelog rows, one commit LSN and time", tc.name, tc.xid, x.n)
	}

	// DuckDB reads the changelog's files (the commit columns of files
	// written ahead come last in them) through the table's metadata.
	dir := filepath.Join(mustAbs(t, tg.warehouse), "public.db", "big__changelog")
	got := duckdbRow(t, "SELECT count(*), count(DISTINCT lsn), count(DISTINCT commit_ts), max(seq) FROM iceberg_scan(?) WHERE xid = ?", dir, ahead1)
	if want := fmt.Sprintf("(%d, 1, 1, %d)", n1, n1); got != want {
		t.Errorf("duckdb: the transaction applied ahead reads as (rows, lsns, commit times, max seq) = %s, want %s", got, want)
	} else {
		t.Logf("duckdb reads the transaction applied ahead: %s", got)
	}
}

// The bridge killed while it applies a streamed transaction ahead of its
// commit, or after merging it into the flush and before committing it,
// restarts and ends with the mirror equal to PostgreSQL and every change in
// the changelog once: what it wrote ahead was never committed, and the
// server sends the transaction again.
func TestStreamedTransactionAheadCrash(t *testing.T) {
	t.Parallel()
	for _, crash := range []string{"spec-change:20000", "spec-commit:1"} {
		t.Run(crash, func(t *testing.T) {
			pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE big (id int PRIMARY KEY, v text, n bigint);
				INSERT INTO big SELECT g, 'old ' || g, g FROM generate_series(1, 10000) g;
				CREATE PUBLICATION big_pub FOR TABLE big;`)
			tg := localTarget(t)
			args := runArgs(pg, "big_pub", tg)
			b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=" + crash}, args...)
			waitSlot(t, conn, "pg2iceberg_big_pub", b)
			waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
			ctx := context.Background()
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var changes int64
			for _, s := range []string{
				"INSERT INTO big SELECT g, 'new ' || g, g FROM generate_series(100001, 140000) g",
				"UPDATE big SET v = 'upd', n = -n WHERE id <= 3000",
				"DELETE FROM big WHERE id BETWEEN 3001 AND 4000",
			} {
				tag, err := tx.Exec(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				changes += tag.RowsAffected()
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			exec1(t, conn, "INSERT INTO big VALUES (500000, 'after', 0)")
			changes++
			b.crashed(t, time.Minute)
			b = startBridge(t, nil, args...)
			waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
			b.stop(t)
			if !strings.Contains(b.log(), "streamed transaction applied ahead") {
				t.Errorf("after the restart the transaction was not applied ahead; log:\n%s", tail(b.log(), 20))
			}
			want := pgRows(t, conn, "id, v, n", "public.big")
			compareRows(t, "iceberg-go", "public.big", "id", icegoRows(t, tg, "public.big"), want)
			checkChangelog(t, tg, "public.big", changes)
		})
	}
}

// Two large transactions stream at once: the first is applied ahead, the
// second spooled; the second commits first (applied from the spool while
// the first is still open), then the first. Then a third, on the rows both
// changed. The mirror ends equal to PostgreSQL, each change once in the
// changelog.
func TestStreamedTransactionsInterleaved(t *testing.T) {
	t.Parallel()
	pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE big (id int PRIMARY KEY, v text, n bigint);
		INSERT INTO big SELECT g, 'old ' || g, g FROM generate_series(1, 10000) g;
		CREATE PUBLICATION big_pub FOR TABLE big;`)
	other := pgConn(t, pg)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "big_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_big_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
	ctx := context.Background()
	var changes int64
	run := func(tx pgx.Tx, sql string) {
		t.Helper()
		tag, err := tx.Exec(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		changes += tag.RowsAffected()
	}
	first, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The statements run one after another, so the WAL holds them in this
	// order and logical decoding, which streams the largest transaction over
	// logical_decoding_work_mem, decides the same way every run: no pause
	// between them is needed.
	run(first, "INSERT INTO big SELECT g, 'first', g FROM generate_series(100001, 130000) g")
	run(second, "INSERT INTO big SELECT g, 'second', g FROM generate_series(200001, 230000) g")
	run(second, "UPDATE big SET v = 'second' WHERE id BETWEEN 5001 AND 8000")
	run(first, "UPDATE big SET v = 'first' WHERE id <= 3000")
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	run(first, "DELETE FROM big WHERE id BETWEEN 3001 AND 4000")
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	third, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run(third, "UPDATE big SET n = -n WHERE id BETWEEN 2001 AND 6000 OR id BETWEEN 120001 AND 125000 OR id BETWEEN 220001 AND 225000")
	if err := third.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
	b.stop(t)
	log := b.log()
	if n := strings.Count(log, "streamed transaction applied ahead"); n != 2 {
		t.Errorf("%d transactions applied ahead, want 2 (the first and the third); log:\n%s", n, tail(log, 30))
	}
	if !strings.Contains(log, "streamed transaction committed") {
		t.Errorf("the second transaction was not applied from the spool; log:\n%s", tail(log, 30))
	}
	want := pgRows(t, conn, "id, v, n", "public.big")
	compareRows(t, "iceberg-go", "public.big", "id", icegoRows(t, tg, "public.big"), want)
	checkChangelog(t, tg, "public.big", changes)
}

// streamEverything are the server settings under which logical decoding
// streams every transaction past 64kB of changes (protocol v2): the
// large transactions of the streamed-transaction tests.
func streamEverything() map[string]string {
	return map[string]string{"logical_decoding_work_mem": "64kB"}
}

// waitLoadCommits waits until a concurrent load has committed n more changes
// (its counter grows), so that its transactions fall between a large
// transaction's statements in the WAL.
func waitLoadCommits(t *testing.T, changes *atomic.Int64, n int64) {
	t.Helper()
	want := changes.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for changes.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the load committed no change within 30 s (at %d, want %d)", changes.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runTx runs stmts in one transaction ended by end (COMMIT or ROLLBACK),
// calling between after each statement, and returns the transaction's xid
// and each statement's command tag.
func runTx(t *testing.T, conn *pgx.Conn, end string, between func(), stmts ...string) (xid int64, tags []pgconn.CommandTag) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, "SELECT txid_current()").Scan(&xid); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		tag, err := tx.Exec(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		tags = append(tags, tag)
		if between != nil {
			between()
		}
	}
	if _, err := tx.Exec(ctx, end); err != nil {
		t.Fatal(err)
	}
	return xid, tags
}

// rowChanges is how many row changes a statement's tag reports: its rows
// for INSERT, UPDATE and DELETE, none for anything else.
func rowChanges(tag pgconn.CommandTag) int64 {
	if tag.Insert() || tag.Update() || tag.Delete() {
		return tag.RowsAffected()
	}
	return 0
}
