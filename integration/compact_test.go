package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// liveFiles returns the live data plus delete files of a table's current
// snapshot, from its summary.
func liveFiles(t *testing.T, tg target, name string) int {
	t.Helper()
	l := iceberg.LiveFilesOf(icegoTable(t, tg, name).CurrentSnapshot())
	return int(l.Data + l.Deletes)
}

// compactSource is a table of 2000 rows for the compaction tests. big is
// TOASTed out of line and never updated: each update leaves it unchanged,
// and the bridge reads it back from the mirror's files, which compactions
// keep replacing.
const compactSource = `CREATE TABLE items (id int PRIMARY KEY, n int, v text, big text);
	INSERT INTO items SELECT g, g, 'v' || g, CASE WHEN g <= 500 THEN (SELECT string_agg(md5(random()::text || x), '') FROM generate_series(1, 200) x) END FROM generate_series(1, 2000) g;
	CREATE PUBLICATION compact_pub FOR TABLE items;`

const compactCols = "id::text AS id, n::text AS n, v, big"

// randomChanges runs random updates (6 in 10, of the first 600 ids, where
// the big values are), inserts (3 in 10) and deletes of at most one row
// each on items until stop is called; changes is then the number of rows
// they changed.
func randomChanges(t *testing.T, pg *harness.Postgres) (stop func() (changes int64)) {
	t.Helper()
	next, changes := 100000, int64(0)
	halt := writeLoad(t, pg, 5*time.Millisecond, func(ctx context.Context, c *pgx.Conn, i int) error {
		var err error
		var n int64
		switch r := rand.IntN(10); {
		case r < 6:
			n, err = execN(ctx, c, `UPDATE items SET n = n + 1, v = 'u' || $1::int WHERE id = 1 + floor(random() * 600)::int`, i)
		case r < 9:
			n, err = execN(ctx, c, `INSERT INTO items VALUES ($1::int, $1::int, 'i' || $1::int)`, next)
			next++
		default:
			n, err = execN(ctx, c, `DELETE FROM items WHERE id = 1 + floor(random() * 2000)::int`)
		}
		changes += n
		return err
	})
	return func() int64 { halt(); return changes }
}

func execN(ctx context.Context, c *pgx.Conn, sql string, args ...any) (int64, error) {
	tag, err := c.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// noCompactionTrouble fails the test if the bridge logged a compaction
// that went wrong.
func noCompactionTrouble(t *testing.T, log string) {
	t.Helper()
	for _, bad := range []string{"compaction failed", "compaction not installed", "rebuilding it", "compaction dropped"} {
		if strings.Contains(log, bad) {
			t.Errorf("%s: %s", bad, lastLine(log, bad))
		}
	}
}

// A mirror flushed every second under random inserts, updates and deletes,
// with default settings, is compacted while the stream runs (its changelog
// too): its current snapshot never holds more than 64 live data plus
// delete files, and after the compactions it equals Postgres in
// iceberg-go and pyiceberg, unchanged TOAST values read back from
// rewritten files included, with one changelog row per change. The key
// index saved at a clean stop after compactions is loaded, not rebuilt,
// and right.
func TestCompactionBoundsLiveFiles(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, compactSource)
	tg := localTarget(t)
	run := runArgs(pg, "compact_pub", tg, "--flush-interval", "1s")
	addr := freeAddr(t)
	b := startBridge(t, nil, append(run, "--metrics-addr", addr)...)
	waitSlot(t, conn, "pg2iceberg_compact_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
	// Spark starts while the load runs; the end reads the mirror with it.
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))

	stop := randomChanges(t, pg)
	load := time.Duration(size(100, 600)) * time.Second
	most, mostLog, polls := 0, 0, 0
	for end := time.Now().Add(load); time.Now().Before(end) && !t.Failed(); polls++ {
		if !b.running() {
			t.Fatalf("bridge exited: %v; log:\n%s", b.err, tail(b.log(), 40))
		}
		most = max(most, liveFiles(t, tg, "public.items"))
		mostLog = max(mostLog, liveFiles(t, tg, "public.items__changelog"))
		time.Sleep(500 * time.Millisecond)
	}
	changes := stop()
	waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
	most = max(most, liveFiles(t, tg, "public.items"))
	installed := strings.Count(b.log(), `msg="compaction installed" table=public.items `)
	installedLog := strings.Count(b.log(), `msg="compaction installed" table=public.items__changelog `)
	t.Logf("%v of load, %d changes: %d polls, at most %d live files in the mirror and %d in the changelog, %d and %d compactions installed; last: %s", load, changes, polls, most, mostLog, installed, installedLog, lastLine(b.log(), "compaction installed"))
	if most > 64 || mostLog > 64 {
		t.Errorf("the mirror held %d and the changelog %d live data + delete files, want at most 64", most, mostLog)
	}
	if installed < 3 || installedLog < 3 {
		t.Errorf("%d mirror and %d changelog compactions installed in %v, want at least 3 each", installed, installedLog, load)
	}
	noCompactionTrouble(t, b.log())
	checkCompactionMetrics(t, addr, installed+installedLog)
	want := pgRows(t, conn, compactCols, "items")
	compareRows(t, "iceberg-go", "items", "id", icegoRows(t, tg, "public.items"), want)
	compareRows(t, "pyiceberg", "items", "id", pyicebergRows(t, tg, "public.items"), want)
	if got, ok := spark.dump(t, "SELECT id, n, v, big FROM pg.public.items"); ok {
		compareRows(t, "Spark SQL", "items", "id", got, want)
	}
	checkDuckDBItems(t, conn, tg)

	// A clean stop saves the index of the compacted table; the restart
	// loads it, and updates through it land on the right rows.
	b.stop(t)
	b = startBridge(t, nil, run...)
	changes += exec1(t, conn, `UPDATE items SET n = -n WHERE id % 7 = 0`)
	changes += exec1(t, conn, `DELETE FROM items WHERE id % 11 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
	if !strings.Contains(b.log(), "key index loaded") {
		t.Errorf("after a clean stop the restart did not load the saved key index: %s", lastLine(b.log(), "key index"))
	}
	want = pgRows(t, conn, compactCols, "items")
	compareRows(t, "iceberg-go after restart", "items", "id", icegoRows(t, tg, "public.items"), want)
	checkChangelog(t, tg, "public.items", changes)
}

// SIGKILL at each step of a compaction (its files written, before the
// install commit, after it and before the key index moves) loses nothing:
// the restart equals Postgres and records every change once.
func TestCompactionCrash(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"compact-written", "compact-install", "compact-committed"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			pg, conn := startSource(t, compactSource)
			tg := localTarget(t)
			run := runArgs(pg, "compact_pub", tg, "--flush-interval", "1s")
			b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=" + point + ":1"}, run...)
			waitSlot(t, conn, "pg2iceberg_compact_pub", b)
			stop := randomChanges(t, pg)
			b.crashed(t, 2*time.Minute)
			// What the killed compaction wrote and never installed is
			// left under the table (for maintain, below).
			leftBehind := len(unreferenced(t, loadTable(t, tg, "public.items")))
			b = startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_compact_pub", b)
			waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
			changes := stop()
			waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
			noCompactionTrouble(t, b.log())
			compareRows(t, "iceberg-go after a crash at "+point, "items", "id", icegoRows(t, tg, "public.items"), pgRows(t, conn, compactCols, "items"))
			checkChangelog(t, tg, "public.items", changes)
			b.stop(t)
			out, err := runOnce(t, append([]string{"maintain", "--orphans-older-than", "0s"}, tg.args()...)...)
			if err != nil {
				t.Fatalf("maintain: %v\n%s", err, out)
			}
			for _, name := range []string{"public.items", "public.items__changelog"} {
				if left := unreferenced(t, loadTable(t, tg, name)); len(left) > 0 {
					t.Errorf("%s: files no metadata names after maintain: %v\n%s", name, left, out)
				}
			}
			t.Logf("the crash at %s left %d files no metadata named; maintain removed them:\n%s", point, leftBehind, out)
			compareRows(t, "iceberg-go after maintain", "items", "id", icegoRows(t, tg, "public.items"), pgRows(t, conn, compactCols, "items"))
		})
	}
}

// checkCompactionMetrics requires /metrics to count the compactions the
// log shows and the mirror's live files.
func checkCompactionMetrics(t *testing.T, addr string, installed int) {
	t.Helper()
	_, body := httpGet(t, "http://"+addr+"/metrics", "")
	for _, want := range []string{
		fmt.Sprintf("pg2iceberg_compactions_total %d\n", installed),
		"pg2iceberg_compaction_failures_total 0\n",
		`pg2iceberg_table_live_files{content="data",table="public.items"} `,
		`pg2iceberg_table_live_files{content="deletes",table="public.items__changelog"} 0`,
		`pg2iceberg_table_last_compaction_timestamp_seconds{table="public.items"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// checkDuckDBItems reads the mirror as a catalog-less reader does (DuckDB's
// iceberg_scan on the table directory, through version-hint.text).
func checkDuckDBItems(t *testing.T, conn *pgx.Conn, tg target) {
	t.Helper()
	dir := filepath.Join(mustAbs(t, tg.warehouse), "public.db", "items")
	got := duckdbRow(t, "SELECT count(*), sum(n), sum(length(big)), count(DISTINCT v) FROM iceberg_scan(?)", dir)
	var want string
	if err := conn.QueryRow(context.Background(), `SELECT '(' || count(*) || ', ' || sum(n) || ', ' || sum(length(big)) || ', ' || count(DISTINCT v) || ')' FROM items`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("duckdb iceberg_scan of the compacted mirror = %s, want %s", got, want)
	} else {
		t.Logf("duckdb iceberg_scan of the compacted mirror: %s (count, sum(n), sum(length(big)), distinct v)", got)
	}
}

// A tables entry's compaction: block turns compaction off: the mirror and
// its changelog grow past the default thresholds and are not compacted;
// then pg2iceberg maintain compacts the mirror with the bridge stopped.
func TestCompactionOff(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, compactSource)
	tg := localTarget(t)
	cfg := noCompaction(t, "public.items")
	b := startBridge(t, nil, runArgs(pg, "compact_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_compact_pub", b)
	stop := randomChanges(t, pg)
	defer stop()
	deadline := time.Now().Add(2 * time.Minute)
	for n := 0; n < 40; n = liveFiles(t, tg, "public.items") {
		if time.Now().After(deadline) || !b.running() || t.Failed() {
			t.Fatalf("the mirror has %d live files, waiting for 40; log:\n%s", n, tail(b.log(), 20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if strings.Contains(b.log(), "compaction installed") {
		t.Errorf("compaction turned off, but: %s", lastLine(b.log(), "compaction installed"))
	}

	// The config file's block binds the bridge only: pg2iceberg maintain,
	// with the bridge stopped, compacts the mirror (a dry run first, which
	// changes nothing), and a restarted bridge streams on into the
	// rewritten files exactly.
	stop()
	waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
	b.stop(t)
	before := liveFiles(t, tg, "public.items")
	maintain := append([]string{"maintain", "--table", "public.items"}, tg.args()...)
	out, err := runOnce(t, append(maintain, "--dry-run")...)
	if err != nil || !strings.Contains(out, "compaction: would rewrite") || liveFiles(t, tg, "public.items") != before {
		t.Fatalf("maintain --dry-run: %v, live files %d → %d; output:\n%s", err, before, liveFiles(t, tg, "public.items"), out)
	}
	out, err = runOnce(t, maintain...)
	after := liveFiles(t, tg, "public.items")
	if err != nil || !strings.Contains(out, "compaction: rewrote") || after >= before/2 {
		t.Fatalf("maintain: %v, live files %d → %d; output:\n%s", err, before, after, out)
	}
	t.Logf("maintain compacted the mirror from %d to %d live files:\n%s", before, after, out)
	// The rewritten files keep the table's layout: zstd and the key's bloom
	// filter, as DuckDB reads their footers.
	data, _ := liveFilePaths(t, tg, "public.items")
	for _, f := range parquetFooters(t, [][2]any{}, data) {
		if !slices.Equal(f.Codecs, []string{"ZSTD"}) || !slices.Contains(f.Bloom, "id") {
			t.Errorf("compacted file %s: codecs %v, bloom filters on %v; want ZSTD and one on id", f.File, f.Codecs, f.Bloom)
		}
	}
	want := pgRows(t, conn, compactCols, "items")
	compareRows(t, "iceberg-go", "items (compacted by maintain)", "id", icegoRows(t, tg, "public.items"), want)
	b = startBridge(t, nil, runArgs(pg, "compact_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_compact_pub", b)
	exec1(t, conn, `UPDATE items SET n = n + 1000, v = 'after maintain' WHERE id % 7 = 0`)
	exec1(t, conn, `DELETE FROM items WHERE id % 11 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_compact_pub", b)
	b.stop(t)
	want = pgRows(t, conn, compactCols, "items")
	compareRows(t, "iceberg-go", "items (streamed after maintain)", "id", icegoRows(t, tg, "public.items"), want)
	compareRows(t, "pyiceberg", "items (streamed after maintain)", "id", pyicebergRows(t, tg, "public.items"), want)
}

// noCompaction writes a config file that turns the bridge's compaction off
// for table (tests of what other writers or maintenance do with its files)
// and returns its path.
func noCompaction(t *testing.T, table string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: "+table+"\n    compaction:\n      enabled: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}
