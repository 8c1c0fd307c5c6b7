package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// The randomized crash driver (issue 23): each seed runs a random workload
// (inserts, updates, deletes, key changes, TRUNCATE, large streamed
// transactions, savepoint rollbacks, rolled-back transactions, ADD COLUMN
// with and without a default) against a bridge that is killed again and
// again, each time at a random failpoint of iceberg.CrashPoints (armed
// with PG2ICEBERG_TEST_CRASH=<point>:<n>, n random) or by a SIGKILL at a
// random moment, and restarted. The bridge compacts after every few files,
// keeps its key index in 4 KiB of memory (so it spills and merges runs on
// disk), and writes one mirror as format v3 (deletion vectors). At the end
// a clean bridge catches up and every mirror must equal Postgres, every
// changelog hold exactly the committed changes (plus one resync row per
// copy an ADD COLUMN with a default asks for) with no (lsn, xid, seq)
// twice.
//
// PG2ICEBERG_CHAOS_SEEDS=N runs seeds 1..N (make test: 3; make chaos: 200);
// PG2ICEBERG_CHAOS_SEED=S runs seed S alone (S1,S2,...: those seeds), to
// reproduce a failure: the same seed draws the same workload, failpoints
// and counts (where a SIGKILL at a random moment lands depends on timing). The summary at the
// end lists the seeds run, the failpoints armed and hit, and the seeds
// that failed.

const chaosSchema = `CREATE TABLE a (id int PRIMARY KEY, v text, n int);
	CREATE TABLE b (id bigint PRIMARY KEY, v text, n int);
	CREATE TABLE e (msg text, n int);
	INSERT INTO a SELECT g, 'a' || g, g FROM generate_series(1, 400) g;
	INSERT INTO b SELECT g, 'b' || g, g FROM generate_series(1, 400) g;
	CREATE PUBLICATION chaos_pub FOR TABLE a, b, e WITH (publish = 'insert, update, delete, truncate');`

const chaosSlot = "pg2iceberg_chaos_pub"

// chaosConfig compacts after two small files and writes b as format v3.
const chaosConfig = `tables:
  - table: "*"
    compaction: {min_input_files: 2, max_live_files: 4, max_delete_files: 2}
  - table: public.b
    format_version: 3
    compaction: {min_input_files: 2, max_live_files: 4, max_delete_files: 2}
`

// chaosStats sums what every seed did, for the summary.
type chaosStats struct {
	mu       sync.Mutex
	seeds    []uint64
	failed   []uint64
	armed    map[string]int
	hit      map[string]int
	kills    int // SIGKILLs at a random moment that landed
	ops      int
	restarts int
}

func (s *chaosStats) add(seed uint64, r *chaosRun, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seeds = append(s.seeds, seed)
	if failed {
		s.failed = append(s.failed, seed)
	}
	for p, n := range r.armed {
		s.armed[p] += n
	}
	for p, n := range r.hit {
		s.hit[p] += n
	}
	s.kills += r.kills
	s.ops += r.ops
	s.restarts += r.restarts
}

func (s *chaosStats) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "randomized crash driver: %d seeds, %d workload operations, %d restarts after a crash (%d SIGKILLs at a random moment)\n",
		len(s.seeds), s.ops, s.restarts, s.kills)
	fmt.Fprintf(&b, "  %-18s %6s %6s\n", "failpoint", "armed", "hit")
	covered := 0
	for _, p := range iceberg.CrashPoints {
		if s.hit[p] > 0 {
			covered++
		}
		fmt.Fprintf(&b, "  %-18s %6d %6d\n", p, s.armed[p], s.hit[p])
	}
	fmt.Fprintf(&b, "  failpoints hit: %d of %d\n", covered, len(iceberg.CrashPoints))
	if len(s.failed) == 0 {
		b.WriteString("  failed seeds: none\n")
	} else {
		failed := append([]uint64(nil), s.failed...)
		sort.Slice(failed, func(i, j int) bool { return failed[i] < failed[j] })
		fmt.Fprintf(&b, "  failed seeds: %v (reproduce one: PG2ICEBERG_CHAOS_SEED=<seed> go test -count=1 -run '^TestCrashRandom$' -v ./integration/)\n", failed)
	}
	return b.String()
}

func chaosSeeds(t *testing.T) []uint64 {
	t.Helper()
	if s := os.Getenv("PG2ICEBERG_CHAOS_SEED"); s != "" {
		var seeds []uint64
		for _, f := range strings.Split(s, ",") {
			seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("PG2ICEBERG_CHAOS_SEED=%q: want a seed number, or several separated by commas", s)
			}
			seeds = append(seeds, seed)
		}
		return seeds
	}
	n := 3
	if s := os.Getenv("PG2ICEBERG_CHAOS_SEEDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("PG2ICEBERG_CHAOS_SEEDS=%q: want a number of seeds, 1 or more", s)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

func TestCrashRandom(t *testing.T) {
	t.Parallel()
	stats := &chaosStats{armed: map[string]int{}, hit: map[string]int{}}
	t.Cleanup(func() {
		sum := stats.summary()
		t.Log("\n" + sum)
		if path := os.Getenv("PG2ICEBERG_CHAOS_REPORT"); path != "" {
			if err := os.WriteFile(path, []byte(sum), 0o644); err != nil {
				t.Errorf("write the chaos report: %v", err)
			}
		}
	})
	for _, seed := range chaosSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			r := &chaosRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
				changes: map[string]int64{}, adds: map[string][]lsnSpan{}, next: map[string]int64{"a": 1000, "b": 1000},
				armed: map[string]int{}, hit: map[string]int{}}
			defer func() {
				stats.add(seed, r, t.Failed())
				if t.Failed() {
					t.Logf("seed %d failed; reproduce: PG2ICEBERG_CHAOS_SEED=%d go test -count=1 -run '^TestCrashRandom$' -v ./integration/", seed, seed)
				}
			}()
			r.run()
		})
	}
}

// chaosRun is one seed's run.
type chaosRun struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	conn *pgx.Conn
	args []string
	b    *bridge
	// crash is what the running bridge was armed with ("" for none);
	// killAt, when set, is the SIGKILL at a random moment armed for it.
	crash  string
	killAt *time.Timer
	killed bool
	// changes counts the committed row changes of each table (its
	// changelog rows); next is each keyed table's next new id.
	changes, next map[string]int64
	// adds holds, per table, where each ADD COLUMN with a default
	// committed: each asks for a copy (a resync row), and one copy may
	// serve several (see resyncsMatch).
	adds                 map[string][]lsnSpan
	cols                 map[string][]string // the columns ADD COLUMN added, per table
	crashesLeft          int
	armed, hit           map[string]int
	kills, ops, restarts int
}

// crashCount is the range n of <point>:<n> is drawn from: how often a
// point is reached in one bridge's life of a seed's workload.
var crashCount = map[string]int{
	"mid-batch": 4000, "spec-change": 4000, "keyindex-spill": 40, "keyindex-merge": 8,
	"before-commit": 12, "after-commit": 12, "index-save": 6,
}

func (r *chaosRun) run() {
	t := r.t
	pg, conn := startSourceWith(t, streamEverything(), chaosSchema)
	r.conn = conn
	dir := t.TempDir()
	if os.Getenv("PG2ICEBERG_CHAOS_KEEP") != "" {
		// The warehouse and the key index stay for a look after a failure.
		var err error
		if dir, err = os.MkdirTemp("", fmt.Sprintf("pg2iceberg-chaos-%d-", r.seed)); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: warehouse, catalog and key index kept in %s", r.seed, dir)
	}
	cfg := filepath.Join(dir, "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(chaosConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := target{name: "local", warehouse: filepath.Join(dir, "warehouse"), catalog: filepath.Join(dir, "warehouse", "catalog.db")}
	flush := []string{"300ms", "1s", "2s"}[r.rng.IntN(3)]
	workers := strconv.Itoa(1 + r.rng.IntN(3))
	r.args = runArgs(pg, "chaos_pub", tg, "--config", cfg, "--flush-interval", flush, "--backfill-workers", workers,
		"--key-index-memory", "4KiB", "--key-index-dir", filepath.Join(dir, "keyindex"))
	r.crashesLeft = 2 + r.rng.IntN(3)
	r.cols = map[string][]string{}
	t.Logf("seed %d: flush every %s, %s copy workers, %d crashes", r.seed, flush, workers, r.crashesLeft)

	r.start()
	// The first copy: the workload begins once the bridge streams, so that
	// every change after it is in the changelog (a crash in the copy
	// restarts it from scratch, before any change).
	for !r.streaming() {
		r.restart()
	}
	ops := 25 + r.rng.IntN(15)
	for i := 0; i < ops; i++ {
		r.step()
		r.ops++
		if !r.b.running() {
			r.restart()
		}
		switch {
		case r.rng.IntN(4) == 0:
			waitCommittedOrExit(t, conn, chaosSlot, r.b)
		default:
			time.Sleep(time.Duration(r.rng.IntN(200)) * time.Millisecond)
		}
		if !r.b.running() {
			r.restart()
		}
	}
	// Whatever is still armed: a bridge that outlived its crash point is
	// stopped (SIGTERM: its last flush and index save may still reach the
	// point) and replaced by a clean one.
	r.crashesLeft = 0
	if r.crash != "" || r.killAt != nil {
		r.stopArmed()
		r.start()
	}
	if !r.streaming() {
		t.Fatalf("the clean bridge exited (%v); log:\n%s", r.b.err, tail(r.b.log(), 40))
	}
	waitCaughtUp(t, conn, chaosSlot, r.b)
	r.b.stop(t)

	for _, table := range []string{"a", "b"} {
		sel := r.selectList(table)
		compareRows(t, "iceberg-go", table, "id", icegoRows(t, tg, "public."+table), pgRows(t, conn, sel, table))
	}
	for _, table := range []string{"a", "b", "e"} {
		r.checkChangelog(tg, table)
	}
}

// selectList reads every column of table as text.
func (r *chaosRun) selectList(table string) string {
	cols := append([]string{"id", "v", "n"}, r.cols[table]...)
	for i, c := range cols {
		cols[i] = c + "::text AS " + c
	}
	return strings.Join(cols, ", ")
}

// checkChangelog requires one changelog row per committed change and one
// resync row per copy the ADD COLUMNs with a default asked for (see
// resyncsMatch), with no (lsn, xid, seq) twice.
func (r *chaosRun) checkChangelog(tg target, table string) {
	t := r.t
	t.Helper()
	rows := icegoRows(t, tg, "public."+table+"__changelog")
	seen := make(map[string]bool, len(rows))
	var dups, changes int64
	var resyncs []uint64
	for _, row := range rows {
		id := fmt.Sprint(row["lsn"], "/", row["xid"], "/", row["seq"])
		if seen[id] {
			dups++
		}
		seen[id] = true
		if row["op"] == "R" {
			lsn, err := strconv.ParseUint(fmt.Sprint(row["lsn"]), 10, 64)
			if err != nil {
				t.Fatalf("%s__changelog: resync row with lsn %v: %v", table, row["lsn"], err)
			}
			resyncs = append(resyncs, lsn)
		} else {
			changes++
		}
	}
	if dups > 0 {
		t.Errorf("%s__changelog: %d changes recorded twice", table, dups)
	}
	if why := resyncsMatch(resyncs, r.adds[table]); changes != r.changes[table] || why != "" {
		t.Errorf("%s__changelog has %d changes, want %d; resync rows at %v for ADD COLUMN ... DEFAULT committed within %v: %s",
			table, changes, r.changes[table], resyncs, r.adds[table], why)
	} else {
		t.Logf("%s__changelog: %d changes and %d resync rows, as committed", table, changes, len(resyncs))
	}
}

// lsnSpan bounds a commit's LSN: the WAL insert position before the
// statement and after it returned.
type lsnSpan struct{ from, to uint64 }

func walInsertLSN(t *testing.T, conn *pgx.Conn) uint64 {
	t.Helper()
	return uint64(lsnOf(t, conn, "SELECT pg_current_wal_insert_lsn()::text"))
}

// resyncsMatch says what is wrong with a changelog's resync rows (their
// LSNs, the copies' snapshots) for the ADD COLUMN ... DEFAULTs committed
// within adds, "" when nothing is: every add is followed by a copy (a
// resync row at or after it), and every copy was asked for by an add not
// already served by the copy before it. A copy whose snapshot is taken
// after several adds serves them all: one row, not one per add.
func resyncsMatch(resyncs []uint64, adds []lsnSpan) string {
	resyncs = slices.Sorted(slices.Values(resyncs))
	for _, a := range adds {
		if !slices.ContainsFunc(resyncs, func(r uint64) bool { return r >= a.from }) {
			return fmt.Sprintf("no resync row after the ADD COLUMN committed within %v", a)
		}
	}
	for j, r := range resyncs {
		var prev uint64
		if j > 0 {
			prev = resyncs[j-1]
		}
		if !slices.ContainsFunc(adds, func(a lsnSpan) bool { return a.to > prev && a.from <= r }) {
			return fmt.Sprintf("resync row at %d serves no ADD COLUMN the copy before it had not", r)
		}
	}
	return ""
}

// start starts a bridge armed with the next crash, if any is left.
func (r *chaosRun) start() {
	r.crash, r.killAt, r.killed = "", nil, false
	var env []string
	if r.crashesLeft > 0 {
		r.crashesLeft--
		if r.rng.IntN(5) == 0 {
			// A SIGKILL at a random moment, wherever the bridge is.
			delay := time.Duration(200+r.rng.IntN(5000)) * time.Millisecond
			r.t.Logf("bridge %d: SIGKILL after %v", r.restarts+1, delay)
			r.b = startBridge(r.t, nil, r.args...)
			b := r.b
			r.killAt = time.AfterFunc(delay, func() {
				if b.running() {
					_ = b.cmd.Process.Kill()
				}
			})
			return
		}
		point := iceberg.CrashPoints[r.rng.IntN(len(iceberg.CrashPoints))]
		n := 1 + r.rng.IntN(max(crashCount[point], 3))
		r.crash = fmt.Sprintf("%s:%d", point, n)
		r.armed[point]++
		env = append(env, "PG2ICEBERG_TEST_CRASH="+r.crash)
		r.t.Logf("bridge %d: armed %s", r.restarts+1, r.crash)
	}
	r.b = startBridge(r.t, env, r.args...)
}

// disarm stops a pending SIGKILL at a random moment, and notes whether it
// had fired.
func (r *chaosRun) disarm() {
	if r.killAt != nil && !r.killAt.Stop() {
		r.killed = true
	}
}

// stopArmed stops a bridge still armed: a SIGKILL at its failpoint on the
// way out counts as a crash like any other.
func (r *chaosRun) stopArmed() {
	t := r.t
	t.Helper()
	// A bridge restarted by the last operation first gets to stream: a
	// SIGTERM before its signal handler is installed ends it by the signal
	// (TestStopDuringStart covers a SIGTERM during the start).
	if r.streaming() {
		r.disarm()
	}
	if r.b.running() && !r.killed {
		_ = r.b.cmd.Process.Signal(syscall.SIGTERM)
	}
	r.b.exited(t, 2*time.Minute)
	if r.b.err != nil {
		r.died()
	}
}

// died requires the bridge, which is not running, to have died of a
// SIGKILL (its armed failpoint or the random one), not of an error, and
// counts it.
func (r *chaosRun) died() {
	t := r.t
	t.Helper()
	r.b.exited(t, 10*time.Second)
	if r.b.err == nil || !strings.Contains(r.b.err.Error(), "killed") {
		t.Fatalf("bridge exited with %v (armed: %q), want only SIGKILLs; log:\n%s", r.b.err, r.crash, tail(r.b.log(), 60))
	}
	r.disarm()
	switch {
	case r.crash != "":
		r.hit[strings.SplitN(r.crash, ":", 2)[0]]++
		t.Logf("bridge %d died at %s", r.restarts+1, r.crash)
	case r.killed:
		r.kills++
		t.Logf("bridge %d killed at a random moment", r.restarts+1)
	default:
		t.Fatalf("bridge died of a SIGKILL nobody armed; log:\n%s", tail(r.b.log(), 60))
	}
}

// restart replaces a bridge that died.
func (r *chaosRun) restart() {
	r.died()
	r.restarts++
	r.start()
}

// streaming waits until the bridge streams (true) or dies (false).
func (r *chaosRun) streaming() bool {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if strings.Contains(r.b.log(), "msg=streaming") {
			return true
		}
		if !r.b.running() {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the bridge did not stream within 3 minutes; log:\n%s", tail(r.b.log(), 40))
	return false
}

// keyed picks a or b.
func (r *chaosRun) keyed() string { return []string{"a", "b"}[r.rng.IntN(2)] }

// exec runs one statement outside a transaction and counts its rows.
func (r *chaosRun) exec(table, sql string, args ...any) {
	r.changes[table] += exec1(r.t, r.conn, sql, args...)
}

// step runs one random workload operation.
func (r *chaosRun) step() {
	t := r.t
	k := r.keyed()
	switch op := r.rng.IntN(100); {
	case op < 22: // a batch of inserts
		n := 1 + r.rng.IntN(200)
		r.exec(k, fmt.Sprintf(`INSERT INTO %s SELECT g, 'i' || g, g FROM generate_series($1::bigint, $2::bigint) g`, k), r.next[k], r.next[k]+int64(n)-1)
		r.next[k] += int64(n)
	case op < 40: // updates of a random slice
		m := 2 + r.rng.IntN(20)
		r.exec(k, fmt.Sprintf(`UPDATE %s SET v = $1, n = n + 1 WHERE id %% $2 = $3`, k), fmt.Sprintf("u%d", r.ops), m, r.rng.IntN(m))
	case op < 50: // deletes of a random slice
		m := 5 + r.rng.IntN(30)
		r.exec(k, fmt.Sprintf(`DELETE FROM %s WHERE id %% $1 = $2`, k), m, r.rng.IntN(m))
	case op < 56: // key changes: positive ids become negative, never twice
		m := 10 + r.rng.IntN(40)
		r.exec(k, fmt.Sprintf(`UPDATE %s SET id = -id, v = 'moved' WHERE id > 0 AND id %% $1 = $2`, k), m, r.rng.IntN(m))
	case op < 63: // keyless appends
		n := 1 + r.rng.IntN(50)
		r.exec("e", `INSERT INTO e SELECT 'e' || g, g FROM generate_series(1, $1::int) g`, n)
	case op < 72: // a large transaction over every table: streamed (logical_decoding_work_mem 64kB)
		r.tx(true, func(tx pgx.Tx, add func(string, int64)) {
			n := 1000 + r.rng.IntN(4000)
			for _, tb := range []string{"a", "b"} {
				add(tb, txExec(t, tx, fmt.Sprintf(`INSERT INTO %s SELECT g, 'big' || g, g FROM generate_series($1::bigint, $2::bigint) g`, tb), r.next[tb], r.next[tb]+int64(n)-1))
				r.next[tb] += int64(n)
			}
			add("e", txExec(t, tx, `INSERT INTO e SELECT 'big' || g, g FROM generate_series(1, 300) g`))
			if r.rng.IntN(2) == 0 {
				// A subtransaction rolled back inside the streamed one.
				txExec(t, tx, `SAVEPOINT s`)
				txExec(t, tx, `UPDATE a SET v = 'rolled back' WHERE id % 3 = 0`)
				txExec(t, tx, `INSERT INTO e SELECT 'rb' || g, g FROM generate_series(1, 500) g`)
				txExec(t, tx, `ROLLBACK TO SAVEPOINT s`)
			}
			add(k, txExec(t, tx, fmt.Sprintf(`UPDATE %s SET n = -n WHERE id %% 7 = $1`, k), r.rng.IntN(7)))
			add(k, txExec(t, tx, fmt.Sprintf(`DELETE FROM %s WHERE id %% 11 = $1`, k), r.rng.IntN(11)))
		})
	case op < 80: // a small transaction with a savepoint rolled back
		r.tx(true, func(tx pgx.Tx, add func(string, int64)) {
			add(k, txExec(t, tx, fmt.Sprintf(`INSERT INTO %s VALUES ($1, 'sp', 1)`, k), r.next[k]))
			r.next[k]++
			txExec(t, tx, `SAVEPOINT s`)
			txExec(t, tx, fmt.Sprintf(`DELETE FROM %s WHERE id %% 2 = 0`, k))
			txExec(t, tx, `ROLLBACK TO SAVEPOINT s`)
			add(k, txExec(t, tx, fmt.Sprintf(`UPDATE %s SET v = 'after sp' WHERE id = $1`, k), r.next[k]-1))
			add("e", txExec(t, tx, `INSERT INTO e VALUES ('sp', 0)`))
		})
	case op < 86: // a transaction over two tables that rolls back
		r.tx(false, func(tx pgx.Tx, _ func(string, int64)) {
			txExec(t, tx, `INSERT INTO a VALUES (-999999999, 'never', 0)`)
			txExec(t, tx, `DELETE FROM b`)
		})
	case op < 92: // several changes of one row in one transaction
		r.tx(true, func(tx pgx.Tx, add func(string, int64)) {
			id := r.next[k]
			r.next[k] += 2
			add(k, txExec(t, tx, fmt.Sprintf(`INSERT INTO %s VALUES ($1, 'x', 0)`, k), id))
			add(k, txExec(t, tx, fmt.Sprintf(`UPDATE %s SET v = 'y' WHERE id = $1`, k), id))
			add(k, txExec(t, tx, fmt.Sprintf(`DELETE FROM %s WHERE id = $1`, k), id))
			add(k, txExec(t, tx, fmt.Sprintf(`INSERT INTO %s VALUES ($1, 'z', 0)`, k), id))
			add(k, txExec(t, tx, fmt.Sprintf(`UPDATE %s SET id = $2 WHERE id = $1`, k), id, id+1))
		})
	case op < 95: // TRUNCATE, then new rows
		exec1(t, r.conn, `TRUNCATE `+k)
		r.changes[k]++
		r.exec(k, fmt.Sprintf(`INSERT INTO %s SELECT g, 't' || g, g FROM generate_series($1::bigint, $2::bigint) g`, k), r.next[k], r.next[k]+49)
		r.next[k] += 50
	default: // ADD COLUMN, at most two a table; one with a default copies the table again
		if len(r.cols[k]) >= 2 {
			r.exec(k, fmt.Sprintf(`UPDATE %s SET v = 'no ddl' WHERE id %% 13 = 0`, k))
			return
		}
		col := fmt.Sprintf("c%d", len(r.cols[k])+1)
		alter := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s int`, k, col)
		if r.rng.IntN(3) == 0 {
			alter += ` DEFAULT 7`
			before := walInsertLSN(t, r.conn)
			exec1(t, r.conn, alter)
			r.adds[k] = append(r.adds[k], lsnSpan{before, walInsertLSN(t, r.conn)})
		} else {
			exec1(t, r.conn, alter)
		}
		r.cols[k] = append(r.cols[k], col)
		r.exec(k, fmt.Sprintf(`UPDATE %s SET %s = n WHERE id %% 5 = 0`, k, col))
	}
}

// tx runs fn in one transaction, counting the changes it adds once it
// commits (commit false: it rolls back, nothing counts).
func (r *chaosRun) tx(commit bool, fn func(tx pgx.Tx, add func(string, int64))) {
	t := r.t
	ctx := context.Background()
	tx, err := r.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	fn(tx, func(table string, n int64) { counts[table] += n })
	if !commit {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for k, v := range counts {
		r.changes[k] += v
	}
}

// resyncsMatch on the cases the driver meets: one copy per add, one copy
// for two adds, a copy cut off, and a copy nobody asked for.
func TestResyncsMatch(t *testing.T) {
	adds := []lsnSpan{{100, 110}, {200, 210}}
	for _, tc := range []struct {
		resyncs []uint64
		ok      bool
	}{
		{[]uint64{150, 250}, true},
		{[]uint64{250}, true},      // one copy after both adds
		{[]uint64{205, 260}, true}, // the first copy's snapshot was taken while the second add committed
		{[]uint64{150}, false},     // the second add's copy is missing
		{nil, false},
		{[]uint64{150, 160, 250}, false}, // a copy no add asked for
		{[]uint64{50, 150, 250}, false},
	} {
		if why := resyncsMatch(tc.resyncs, adds); (why == "") != tc.ok {
			t.Errorf("resyncsMatch(%v, %v) = %q, want ok %t", tc.resyncs, adds, why, tc.ok)
		}
	}
	if why := resyncsMatch(nil, nil); why != "" {
		t.Errorf("no adds, no copies: %q", why)
	}
}
