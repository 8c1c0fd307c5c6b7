package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// The reconnect tests terminate one of the bridge's connections at a
// chosen moment and require that the same process survives it: it logs the
// reconnect, the mirror equals Postgres, and the changelog holds exactly
// the committed changes with no (lsn, xid, seq) twice.

const reconnectSchema = `CREATE TABLE a (id int PRIMARY KEY, v text);
	CREATE TABLE b (id int PRIMARY KEY, v text);
	INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 100) g;
	CREATE PUBLICATION rc_pub FOR TABLE a, b;`

const reconnectSlot = "pg2iceberg_rc_pub"

// reconnectRun is one bridge streaming rc_pub, with /metrics at addr.
type reconnectRun struct {
	pg   *harness.Postgres
	conn *pgx.Conn
	tg   target
	addr string
	b    *bridge
	pid  int
	// changes counts the committed row changes of each table since the
	// copy (the changelog's rows).
	changes map[string]int64
}

func startReconnect(t *testing.T, settings map[string]string, schema string) *reconnectRun {
	t.Helper()
	pg, conn := startSourceWith(t, settings, schema)
	r := &reconnectRun{pg: pg, conn: conn, tg: localTarget(t), addr: freeAddr(t), changes: map[string]int64{}}
	r.b = startBridge(t, nil, runArgs(pg, "rc_pub", r.tg, "--metrics-addr", r.addr)...)
	waitSlot(t, conn, reconnectSlot, r.b)
	r.pid = r.b.cmd.Process.Pid
	return r
}

// terminate ends the backends the query selects (a pid column) and
// requires that it ended at least one.
func (r *reconnectRun) terminate(t *testing.T, what, pids string) {
	t.Helper()
	if n := r.tryTerminate(t, what, pids); n == 0 {
		t.Fatalf("no backend to terminate for %s", what)
	}
}

// tryTerminate ends the backends the query selects and returns how many.
func (r *reconnectRun) tryTerminate(t *testing.T, what, pids string) int {
	t.Helper()
	var n int
	if err := r.conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM (`+pids+`) p`).Scan(&n); err != nil {
		t.Fatalf("terminate %s: %v", what, err)
	}
	if n > 0 {
		t.Logf("terminated %d backend(s): %s", n, what)
	}
	return n
}

const walsenderPids = `SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = '` + reconnectSlot + `' AND active_pid IS NOT NULL`

// waitReceivedPast waits until the bridge has received WAL past lsn
// (pg2iceberg_received_lsn), polling quickly: the caller acts while the
// transaction that follows lsn is still being received.
func (r *reconnectRun) waitReceivedPast(t *testing.T, lsn pglogrepl.LSN) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if pglogrepl.LSN(metricValue(t, r.addr, "pg2iceberg_received_lsn")) > lsn {
			return
		}
		if !r.b.running() {
			t.Fatalf("bridge exited (%v); log:\n%s", r.b.err, tail(r.b.log(), 40))
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the bridge did not receive past %s within a minute", lsn)
}

// finish waits until everything is committed, requires the same process
// to have survived lost connections (lost of them counted by /metrics
// when known, with want in its log), stops it and checks the tables.
func (r *reconnectRun) finish(t *testing.T, lost int64, want ...string) {
	t.Helper()
	waitCaughtUp(t, r.conn, reconnectSlot, r.b)
	if pid := r.b.cmd.Process.Pid; !r.b.running() || pid != r.pid {
		t.Fatalf("bridge pid %d running=%v, want pid %d still running", pid, r.b.running(), r.pid)
	}
	if lost > 0 {
		r.checkLost(t, lost)
	}
	for _, w := range want {
		if !strings.Contains(r.b.log(), w) {
			t.Errorf("log lacks %q:\n%s", w, tail(r.b.log(), 30))
		}
	}
	r.b.stop(t)
	for _, table := range []string{"a", "b"} {
		compareRows(t, "iceberg-go", table, "id", icegoRows(t, r.tg, "public."+table), pgRows(t, r.conn, "id::text AS id, v", table))
		checkChangelogExact(t, r.tg, "public."+table, r.changes[table])
	}
}

// checkLost requires /metrics to count n lost connections survived.
func (r *reconnectRun) checkLost(t *testing.T, n int64) {
	t.Helper()
	const lost = `pg2iceberg_errors_total{kind="replication_connection"}`
	if got := metricValue(t, r.addr, lost); got != n {
		t.Errorf("%s = %d, want %d (the lost connections survived)", lost, got, n)
	}
}

// checkChangelogExact requires want changelog rows, no (lsn, xid, seq)
// twice, read with iceberg-go (fast for the large tables here).
func checkChangelogExact(t *testing.T, tg target, table string, want int64) {
	t.Helper()
	rows := icegoRows(t, tg, table+"__changelog")
	seen := make(map[string]bool, len(rows))
	dups := 0
	for _, r := range rows {
		id := fmt.Sprint(r["lsn"], "/", r["xid"], "/", r["seq"])
		if seen[id] {
			dups++
		}
		seen[id] = true
	}
	if dups > 0 {
		t.Errorf("%s__changelog: %d changes recorded twice", table, dups)
	}
	if int64(len(rows)) != want {
		t.Errorf("%s__changelog has %d rows, want %d (one per committed change); the first: %v", table, len(rows), want, rows[:min(len(rows), 3)])
	}
}

// bigTx runs a multi-statement transaction of 4 x n row changes over both
// tables, and returns the LSN before it.
func (r *reconnectRun) bigTx(t *testing.T, n int, during func(tx pgx.Tx, before pglogrepl.LSN)) pglogrepl.LSN {
	t.Helper()
	ctx := context.Background()
	before := lsnOf(t, r.conn, "SELECT pg_current_wal_insert_lsn()::text")
	tx, err := r.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.changes["b"] += txExec(t, tx, `INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, $1) g`, n)
	r.changes["a"] += txExec(t, tx, `INSERT INTO a SELECT g, 'a' || g FROM generate_series(1000, 999 + $1) g`, n)
	if during != nil {
		during(tx, before)
	}
	r.changes["b"] += txExec(t, tx, `UPDATE b SET v = 'updated' WHERE id % 2 = 0`)
	r.changes["a"] += txExec(t, tx, `DELETE FROM a WHERE id >= 1000 AND id % 3 = 0`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return before
}

// restarted is the bridge's log line of a restart in the process.
const restarted = `msg="connection lost; restarting from the durable position"`

// (a) The walsender is terminated while the bridge receives a large
// transaction that is not streamed (logical_decoding_work_mem is large, so
// the server sends it after its commit).
func TestReconnectInsideTransaction(t *testing.T) {
	t.Parallel()
	r := startReconnect(t, map[string]string{"logical_decoding_work_mem": "1GB"}, reconnectSchema)
	exec1(t, r.conn, `UPDATE a SET v = 'before' WHERE id <= 10`)
	r.changes["a"] += 10
	waitCaughtUp(t, r.conn, reconnectSlot, r.b)
	before := r.bigTx(t, size(100_000, 300_000), nil)
	// Past the previous commit's message and the BEGIN: among the changes.
	r.waitReceivedPast(t, before+64<<10)
	r.terminate(t, "the walsender inside the transaction", walsenderPids)
	exec1(t, r.conn, `UPDATE a SET v = 'after' WHERE id <= 5`)
	r.changes["a"] += 5
	r.finish(t, 1, restarted, "in_transaction=true")
}

// (b) The walsender is terminated inside a streamed transaction (protocol
// v2: logical_decoding_work_mem is 64kB, so the server streams it while it
// is open): the spool and anything applied ahead are dropped, and the
// server streams the transaction again.
func TestReconnectInsideStreamedTransaction(t *testing.T) {
	t.Parallel()
	r := startReconnect(t, map[string]string{"logical_decoding_work_mem": "64kB"}, reconnectSchema)
	r.bigTx(t, size(20_000, 100_000), func(tx pgx.Tx, before pglogrepl.LSN) {
		// The transaction is open: what the bridge received of it was streamed.
		r.waitReceivedPast(t, before+64<<10)
		r.terminate(t, "the walsender inside a streamed transaction", walsenderPids)
		r.changes["b"] += txExec(t, tx, `UPDATE b SET v = 'after the terminate' WHERE id <= 1000`)
	})
	r.finish(t, 1, "replication connection lost")
}

// (c) The copy's connections are terminated during the initial copy: the
// copy is resumed in the process, keeping the chunks it committed.
func TestReconnectDuringCopy(t *testing.T) {
	t.Parallel()
	rows := size(300_000, 1_000_000)
	pg, conn := startSource(t, fmt.Sprintf(`CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (id int PRIMARY KEY, v text);
		INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, %d) g;
		CREATE PUBLICATION rc_pub FOR TABLE a, b;`, rows))
	r := &reconnectRun{pg: pg, conn: conn, tg: localTarget(t), addr: freeAddr(t), changes: map[string]int64{}}
	r.b = startBridge(t, nil, runArgs(pg, "rc_pub", r.tg, "--metrics-addr", r.addr)...)
	r.pid = r.b.cmd.Process.Pid
	copying := `SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'active'
		AND query ILIKE 'COPY%' AND pid <> pg_backend_pid()`
	deadline := time.Now().Add(time.Minute)
	for r.tryTerminate(t, "the copy's connections", copying) == 0 {
		if time.Now().After(deadline) || !r.b.running() {
			t.Fatalf("no copy running within a minute; log:\n%s", tail(r.b.log(), 30))
		}
	}
	waitSlot(t, conn, reconnectSlot, r.b)
	exec1(t, conn, `UPDATE b SET v = 'after' WHERE id <= 10`)
	r.changes["b"] += 10
	r.finish(t, 1, restarted, "copy started")
}

// (d) The SQL session is terminated between transactions: the next
// change that needs it (ADD COLUMN ... DEFAULT: are there defaults, then
// a copy of the table again) finds it gone, and the bridge restarts in
// the process, taking the lease again on a new session.
func TestReconnectSQLSession(t *testing.T) {
	t.Parallel()
	r := startReconnect(t, nil, reconnectSchema)
	exec1(t, r.conn, `UPDATE a SET v = 'before' WHERE id <= 10`)
	r.changes["a"] += 10
	waitCaughtUp(t, r.conn, reconnectSlot, r.b)
	r.terminate(t, "the SQL session", `SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'pg2iceberg pid%'`)
	exec1(t, r.conn, `ALTER TABLE b ADD COLUMN d text NOT NULL DEFAULT 'dflt'`)
	r.changes["b"]++ // the re-copy's resync row (op R)
	exec1(t, r.conn, `INSERT INTO b VALUES (1, 'one', 'x')`)
	r.changes["b"]++
	exec1(t, r.conn, `UPDATE a SET v = 'after' WHERE id <= 5`)
	r.changes["a"] += 5
	waitCaughtUp(t, r.conn, reconnectSlot, r.b)
	if pid := r.b.cmd.Process.Pid; !r.b.running() || pid != r.pid {
		t.Fatalf("bridge pid %d running=%v, want pid %d still running", pid, r.b.running(), r.pid)
	}
	r.checkLost(t, 1)
	for _, w := range []string{"SQL connection lost too; reopening it", "copying the table again"} {
		if !strings.Contains(r.b.log(), w) {
			t.Errorf("log lacks %q:\n%s", w, tail(r.b.log(), 30))
		}
	}
	r.b.stop(t)
	compareRows(t, "iceberg-go", "b", "id", icegoRows(t, r.tg, "public.b"), pgRows(t, r.conn, "id::text AS id, v, d", "b"))
	compareRows(t, "iceberg-go", "a", "id", icegoRows(t, r.tg, "public.a"), pgRows(t, r.conn, "id::text AS id, v", "a"))
	checkChangelogExact(t, r.tg, "public.a", r.changes["a"])
	checkChangelogExact(t, r.tg, "public.b", r.changes["b"])
}

// A fast and then an immediate restart of Postgres under a write load:
// the bridge survives both in the process. Each transaction inserts a row
// and updates it, so the rows in Postgres afterwards say which committed
// (an immediate restart leaves the outcome of a commit in flight unknown
// to the client) and the changelog holds two changes for each.
func TestServerRestartUnderLoad(t *testing.T) {
	t.Parallel()
	r := startReconnect(t, map[string]string{"logical_decoding_work_mem": "64kB"}, reconnectSchema)
	ctx, cancel := context.WithCancel(context.Background())
	loaded := make(chan int)
	go func() {
		id, c := 1, (*pgx.Conn)(nil)
		defer func() { loaded <- id }()
		for ctx.Err() == nil {
			if c == nil {
				var err error
				if c, err = r.pg.Conn(ctx, "postgres"); err != nil {
					time.Sleep(50 * time.Millisecond) // the server is restarting
					continue
				}
			}
			n := 1
			if id%100 == 0 {
				n = 2000 // now and then a transaction large enough to stream
			}
			err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO b SELECT g, 'new' FROM generate_series($1::int, $1::int + $2::int - 1) g`, id, n); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `UPDATE b SET v = 'upd' WHERE id >= $1::int AND id < $1::int + $2::int`, id, n)
				return err
			})
			if err != nil {
				c.Close(context.Background())
				c = nil
			}
			id += n // unique ids whether or not it committed
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for _, mode := range []string{"fast", "immediate"} {
		waitFlushes(t, r, 2)
		if err := r.pg.RestartMode(mode); err != nil {
			t.Fatalf("restart -m %s: %v", mode, err)
		}
		t.Logf("restarted postgres (-m %s)", mode)
	}
	waitFlushes(t, r, 2)
	cancel()
	<-loaded
	r.conn = pgConn(t, r.pg)
	var committed int64
	if err := r.conn.QueryRow(context.Background(), `SELECT count(*) FROM b`).Scan(&committed); err != nil {
		t.Fatal(err)
	}
	r.changes["b"] = 2 * committed
	const lostConns = `pg2iceberg_errors_total{kind="replication_connection"}`
	if n := metricValue(t, r.addr, lostConns); n < 2 {
		t.Errorf("%s = %d, want at least one per restart", lostConns, n)
	}
	r.finish(t, 0, "SQL connection lost too; reopening it")
}

// waitFlushes waits until the bridge has committed n more flushes.
func waitFlushes(t *testing.T, r *reconnectRun, n int64) {
	t.Helper()
	waitFlushesWithin(t, r, n, 2*time.Minute)
}

// waitFlushesWithin is waitFlushes with another bound than 2 minutes.
func waitFlushesWithin(t *testing.T, r *reconnectRun, n int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var start int64 = -1
	for time.Now().Before(deadline) {
		if !r.b.running() {
			t.Fatalf("bridge exited (%v); log:\n%s", r.b.err, tail(r.b.log(), 40))
		}
		// /metrics answers while the bridge reconnects.
		got := metricValue(t, r.addr, "pg2iceberg_flushes_total")
		if start < 0 {
			start = got
		}
		if got >= start+n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("fewer than %d flushes within %s; log:\n%s", n, within, tail(r.b.log(), 30))
}
