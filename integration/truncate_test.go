package integration

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
)

// watchRSS samples the bridge's VmHWM (the high-water mark of its own
// memory) every 10 ms until it exits, and returns a function that waits
// for the exit and gives the last value read, in bytes. Not getrusage of
// the waited child: Linux counts the parent's RSS at the fork into the
// child's ru_maxrss (exec records the old mm's high-water mark), so a large
// test process makes every child look large.
func watchRSS(t *testing.T, b *bridge) func() int64 {
	t.Helper()
	var peak atomic.Int64
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, ok := vmHWM(b.cmd.Process.Pid); ok && v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-b.done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		t.Helper()
		<-b.done
		<-stopped
		if peak.Load() == 0 {
			t.Fatal("no VmHWM read for the bridge process")
		}
		return peak.Load()
	}
}

// vmHWM reads VmHWM of a live process; false once it is gone.
func vmHWM(pid int) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// sharedFiles returns the files both sets name.
func sharedFiles(a, b map[string]icego.ManifestEntryContent) []string {
	var out []string
	for f := range a {
		if _, ok := b[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// TRUNCATE and a re-copy replace a mirror's files in the commit instead of
// writing a position delete per row: a 2M-row mirror is truncated, and
// another replaced by pg2iceberg backfill --table (the table shrank to
// 1,000 rows while the bridge was stopped, so the copy itself is small),
// under a 128 MiB memory limit, and the peak RSS of each process stays
// under it. Afterwards the
// current snapshot references none of the old data and delete files, and
// the mirror equals PostgreSQL. Rows the same flush wrote before the
// TRUNCATE (here: the same transaction) are dropped with it; rows written
// after it, some then updated and deleted, are kept.
func TestTruncateRemovesFiles(t *testing.T) {
	t.Parallel()
	const limit = 128 << 20
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v int);
		CREATE TABLE r (id int PRIMARY KEY, v int);
		INSERT INTO t SELECT g, g FROM generate_series(1, 2000000) g;
		INSERT INTO r SELECT g, g FROM generate_series(1, 2000000) g;
		CREATE PUBLICATION t_pub FOR TABLE t, r;`)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "t_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s", "--memory-limit", "128MiB"}, common...)
	b := startBridge(t, nil, append([]string{"run"}, common...)...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	exec1(t, conn, `UPDATE t SET v = -v WHERE id % 1000 = 0`) // a delete file to drop too
	exec1(t, conn, `UPDATE r SET v = -v WHERE id % 1000 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	oldT := snapshotFiles(t, icegoTable(t, tg, "public.t"), true)
	oldR := snapshotFiles(t, icegoTable(t, tg, "public.r"), true)

	b = startBridge(t, nil, run...)
	rssOf := watchRSS(t, b)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	exec1(t, conn, `BEGIN;
		UPDATE t SET v = 0 WHERE id <= 10;
		INSERT INTO t VALUES (3000001, 1);
		TRUNCATE t;
		INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g;
		UPDATE t SET v = v + 1 WHERE id <= 10;
		DELETE FROM t WHERE id BETWEEN 11 AND 20;
		COMMIT`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	if rss := rssOf(); rss >= limit {
		t.Errorf("peak RSS of the bridge that truncated a 2M-row mirror: %d MiB, want under %d MiB", rss>>20, limit>>20)
	} else {
		t.Logf("peak RSS of the bridge that truncated a 2M-row mirror: %d MiB", rss>>20)
	}

	// The source table shrank while the bridge was stopped: the re-copy
	// brings 1,000 rows and replaces a mirror of 2M.
	exec1(t, conn, `BEGIN; TRUNCATE r; INSERT INTO r SELECT g, g FROM generate_series(1, 1000) g; COMMIT`)
	b = startBridge(t, []string{"GOMEMLIMIT=128MiB"}, append([]string{"backfill", "--table", "public.r"}, common...)...)
	rssOf = watchRSS(t, b)
	b.exited(t, 3*time.Minute)
	if b.err != nil || !strings.Contains(b.log(), "table sync finished") {
		t.Fatalf("backfill --table public.r: %v\n%s", b.err, tail(b.log(), 20))
	}
	if rss := rssOf(); rss >= limit {
		t.Errorf("peak RSS of backfill --table replacing a 2M-row mirror: %d MiB, want under %d MiB", rss>>20, limit>>20)
	} else {
		t.Logf("peak RSS of backfill --table replacing a 2M-row mirror: %d MiB", rss>>20)
	}

	// The next run resumes from the watermarks those commits carry: the
	// TRUNCATE transaction is not applied again, and the changelogs record
	// each TRUNCATE once and the re-copy as one R row.
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	exec1(t, conn, `UPDATE r SET v = v + 1 WHERE id <= 5`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	for name, want := range map[string][2]int{"public.t": {1, 0}, "public.r": {1, 1}} {
		var got [2]int // T rows, R rows
		for _, c := range pyicebergRows(t, tg, name+"__changelog") {
			switch c["op"] {
			case "T":
				got[0]++
			case "R":
				got[1]++
			}
		}
		if got != want {
			t.Errorf("%s__changelog has %d T and %d R rows, want %d and %d", name, got[0], got[1], want[0], want[1])
		}
	}
	for _, tc := range []struct {
		name string
		old  map[string]icego.ManifestEntryContent
	}{{"public.t", oldT}, {"public.r", oldR}} {
		now := snapshotFiles(t, icegoTable(t, tg, tc.name), true)
		if kept := sharedFiles(tc.old, now); len(kept) > 0 {
			t.Errorf("%s: the current snapshot still references %d of the %d files from before: %v", tc.name, len(kept), len(tc.old), kept)
		}
		var deletes int
		for _, c := range now {
			if c != icego.EntryContentData {
				deletes++
			}
		}
		t.Logf("%s: %d files in the current snapshot, %d of them delete files", tc.name, len(now), deletes)
	}
	for _, name := range []string{"public.t", "public.r"} {
		compareRows(t, "iceberg-go", name, "id", icegoRows(t, tg, name), pgRows(t, conn, "id, v", name))
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 990 {
		t.Fatalf("t has %d rows (%v), want 990", n, err)
	}
}
