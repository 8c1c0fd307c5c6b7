package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// keyIndexSource has a bigint-keyed and a uuid-keyed table (the integer
// table and the long-key map of the index), 2000 rows each.
const keyIndexSource = `CREATE TABLE ki_int (id bigint PRIMARY KEY, n int, v text);
	INSERT INTO ki_int SELECT g, g, 'v' || g FROM generate_series(1, 2000) g;
	CREATE TABLE ki_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int, v text);
	INSERT INTO ki_uuid (n, v) SELECT g, 'v' || g FROM generate_series(1, 2000) g;
	CREATE PUBLICATION ki_pub FOR TABLE ki_int, ki_uuid;`

const keyIndexCols = "id::text AS id, n::text AS n, v"

// keyIndexChanges runs random updates, inserts, deletes and key changes
// of a few rows each on both tables until stop is called; stop returns the
// rows each table's statements changed.
func keyIndexChanges(t *testing.T, pg *harness.Postgres, next *int64) (stop func() map[string]int64) {
	t.Helper()
	var mu sync.Mutex // guards changes
	changes := map[string]int64{}
	halt := writeLoad(t, pg, 2*time.Millisecond, func(ctx context.Context, c *pgx.Conn, i int) error {
		tbl := "ki_int"
		if i%2 == 1 {
			tbl = "ki_uuid"
		}
		some := func(n int) string {
			return fmt.Sprintf("(SELECT id FROM %s ORDER BY random() LIMIT %d)", tbl, n)
		}
		var sql string
		switch r := rand.IntN(10); {
		case r < 5:
			sql = fmt.Sprintf("UPDATE %s SET n = n + 1, v = 'u%d' WHERE id IN %s", tbl, i, some(5))
		case r < 7 && tbl == "ki_int":
			*next += 3
			sql = fmt.Sprintf("INSERT INTO ki_int SELECT g, g, 'i' || g FROM generate_series(%d, %d) g", *next-2, *next)
		case r < 7:
			sql = fmt.Sprintf("INSERT INTO ki_uuid (n, v) SELECT g, 'i%d' FROM generate_series(1, 3) g", i)
		case r < 8:
			sql = fmt.Sprintf("DELETE FROM %s WHERE id IN %s", tbl, some(2))
		case tbl == "ki_int":
			*next++
			sql = fmt.Sprintf("UPDATE ki_int SET id = %d, v = 'k%d' WHERE id IN %s", *next, i, some(1))
		default:
			sql = fmt.Sprintf("UPDATE ki_uuid SET id = gen_random_uuid(), v = 'k%d' WHERE id IN %s", i, some(1))
		}
		n, err := execN(ctx, c, sql)
		mu.Lock()
		changes["public."+tbl] += n
		mu.Unlock()
		return err
	})
	return func() map[string]int64 {
		halt()
		mu.Lock()
		defer mu.Unlock()
		return changes
	}
}

// runFiles counts the run files of every table's directory under dir.
func runFiles(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.run"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// waitSpilled waits until both mirrors' key indexes have runs on disk
// (the metric) and the bridge has installed a compaction of ki_int, whose
// Remap then moved keys held in runs.
func waitSpilled(t *testing.T, b *bridge, addr string, compaction bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if !b.running() {
			t.Fatalf("bridge exited: %v; log:\n%s", b.err, tail(b.log(), 40))
		}
		ok := metricValue(t, addr, `pg2iceberg_key_index_runs{table="public.ki_int"}`) > 0 &&
			metricValue(t, addr, `pg2iceberg_key_index_runs{table="public.ki_uuid"}`) > 0 &&
			metricValue(t, addr, `pg2iceberg_key_index_disk_bytes{table="public.ki_uuid"}`) > 0
		if ok && (!compaction || strings.Contains(b.log(), `msg="compaction installed" table=public.ki_int `)) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no runs on disk (or no compaction of ki_int) within 3 minutes; log:\n%s", tail(b.log(), 40))
}

// checkKeyIndexMirrors requires both mirrors to equal Postgres, read by
// iceberg-go and pyiceberg.
func checkKeyIndexMirrors(t *testing.T, conn *pgx.Conn, tg target, when string) {
	t.Helper()
	for _, tbl := range []string{"ki_int", "ki_uuid"} {
		want := pgRows(t, conn, keyIndexCols, tbl)
		compareRows(t, "iceberg-go "+when, tbl, "id", icegoRows(t, tg, "public."+tbl), want)
		compareRows(t, "pyiceberg "+when, tbl, "id", pyicebergRows(t, tg, "public."+tbl), want)
	}
}

// indexesLogged requires the bridge to have logged msg for both mirrors
// (their indexes rebuilt or loaded at its start).
func indexesLogged(t *testing.T, b *bridge, msg, problem string) {
	t.Helper()
	for _, tbl := range []string{"public.ki_int", "public.ki_uuid"} {
		if !strings.Contains(b.log(), `msg="`+msg+`" table=`+tbl+" ") {
			t.Errorf("%s: %s: %s", tbl, problem, lastLine(b.log(), "key index"))
		}
	}
}

var savedOnDisk = regexp.MustCompile(`msg="key index saved on disk" table=(\S+) rows=\d+ runs=(\d+) bytes=\d+ spills=(\d+) merges=(\d+)`)

// A bridge whose key index may hold 4 KiB of keys in memory streams
// inserts, updates, deletes and key changes into a bigint-keyed and a
// uuid-keyed mirror (partitioned by a bucket of its key), compacted as it goes: the indexes spill to sorted
// runs in --key-index-dir (files there, the runs metric above 0) and merge
// them, and the mirrors equal Postgres after a SIGKILL while streaming
// with runs on disk (the index is rebuilt), after a clean stop (the saved
// runs are loaded) and after a SIGKILL during a merge of runs.
func TestKeyIndexOnDisk(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, keyIndexSource)
	tg := localTarget(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	// ki_uuid is partitioned: its deletes go under their files' partitions.
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.ki_uuid\n    partition: [\"bucket(4, id)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := runArgs(pg, "ki_pub", tg, "--config", cfg, "--key-index-memory", "4KiB", "--key-index-dir", dir, "--metrics-addr", addr)
	const slot = "pg2iceberg_ki_pub"
	total := map[string]int64{}
	add := func(m map[string]int64) {
		for k, v := range m {
			total[k] += v
		}
	}
	next := int64(1_000_000)

	b := startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	stop := keyIndexChanges(t, pg, &next)
	waitSpilled(t, b, addr, true)
	if n := runFiles(t, dir); n < 2 {
		t.Fatalf("%d run files in --key-index-dir with both indexes spilled, want at least 2", n)
	}
	b.kill() // while streaming, with runs on disk

	// The restart after a SIGKILL rebuilds both indexes, spills again,
	// and catches up to the load.
	restart := func(when string) {
		b = startBridge(t, nil, run...)
		waitSlot(t, conn, slot, b)
		indexesLogged(t, b, "key index rebuilt", "after a SIGKILL the index was not rebuilt")
		waitSpilled(t, b, addr, false)
		add(stop())
		waitCaughtUp(t, conn, slot, b)
		checkKeyIndexMirrors(t, conn, tg, when)
	}
	restart("after a SIGKILL while streaming")

	// A clean stop saves the runs; the restart loads them.
	b.stop(t)
	saved := savedOnDisk.FindAllStringSubmatch(b.log(), -1)
	if len(saved) != 2 {
		t.Fatalf("a clean stop logged %d key indexes saved on disk, want 2:\n%s", len(saved), tail(b.log(), 20))
	}
	for _, m := range saved {
		runs, _ := strconv.Atoi(m[2])
		merges, _ := strconv.Atoi(m[4])
		t.Logf("%s at a clean stop: %s runs after %s spills and %s merges", m[1], m[2], m[3], m[4])
		if runs < 1 || merges < 3 {
			t.Errorf("%s saved %s runs after %s spills and %s merges, want a run and at least 3 merges", m[1], m[2], m[3], m[4])
		}
	}
	if n, _ := filepath.Glob(filepath.Join(dir, "*", "MANIFEST")); len(n) != 2 {
		t.Errorf("%d manifests in --key-index-dir after a clean stop, want 2", len(n))
	}
	b = startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=keyindex-merge:3"}, run...)
	waitSlot(t, conn, slot, b)
	indexesLogged(t, b, "key index loaded", "after a clean stop the saved index was not loaded")
	stop = keyIndexChanges(t, pg, &next)
	b.crashed(t, 2*time.Minute) // in a merge of runs

	restart("after a SIGKILL in a merge")
	for tbl, n := range total {
		checkChangelog(t, tg, tbl, n)
	}
	noCompactionTrouble(t, b.log())
}
