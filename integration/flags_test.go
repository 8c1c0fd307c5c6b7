package integration

import (
	"strings"
	"testing"
	"time"
)

// --debug works before and after the command; an unknown flag is a
// one-line error, not the command's help; a --memory-limit that is
// mistyped or overflows is refused before anything starts.
func TestFlags(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE PUBLICATION fl_pub FOR TABLE t;`)
	tg := localTarget(t)
	args := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "fl_pub", "--flush-interval", "1s"}, tg.args()...)
	for _, pos := range []string{"before", "after"} {
		a := append([]string{"run", "--debug"}, args...)
		if pos == "before" {
			a = append([]string{"--debug", "run"}, args...)
		}
		b := startBridge(t, nil, a...)
		waitSlot(t, conn, "pg2iceberg_fl_pub", b)
		exec1(t, conn, `INSERT INTO t VALUES (1, 'a') ON CONFLICT (id) DO UPDATE SET v = t.v || 'a'`)
		waitCaughtUp(t, conn, "pg2iceberg_fl_pub", b)
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(b.log(), "level=DEBUG") && time.Now().Before(deadline) && b.running() {
			time.Sleep(100 * time.Millisecond)
		}
		b.stop(t)
		if !strings.Contains(b.log(), "level=DEBUG") {
			t.Errorf("--debug %s the command: no debug line in the log:\n%s", pos, tail(b.log(), 10))
		}
	}

	out, err := runOnce(t, append([]string{"status", "--no-such-flag"}, args...)...)
	if err == nil || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "no-such-flag") || strings.Contains(out, "USAGE") {
		t.Errorf("unknown flag: err %v, want a one-line error naming it; output:\n%s", err, out)
	}
	for _, tc := range []struct{ limit, want string }{
		{"9223372036854775807KiB", "too large"},
		{"1G", `unit "G"`},
		{"512", "too small"},
	} {
		out, err := runOnce(t, append([]string{"run", "--memory-limit", tc.limit}, args...)...)
		if err == nil || !strings.Contains(out, tc.want) || strings.Contains(out, "level=") {
			t.Errorf("--memory-limit %s: err %v, want a refusal mentioning %q before anything runs; output:\n%s", tc.limit, err, tc.want, out)
		}
	}
}

// run --backfill=skip copies none of the rows a table already has: its
// mirror holds exactly the rows inserted or updated since, and the
// changelog exactly those changes. A value other than copy or skip is
// refused before anything runs.
func TestBackfillSkip(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'old' FROM generate_series(1, 10) g;
		CREATE PUBLICATION bs_pub FOR TABLE t;`)
	tg := localTarget(t)
	out, err := runOnce(t, runArgs(pg, "bs_pub", tg, "--backfill=none")...)
	if err == nil || !strings.Contains(out, `--backfill "none": use copy or skip`) || strings.Contains(out, "level=") {
		t.Errorf("--backfill=none: err %v, want a refusal naming copy and skip before anything runs; output:\n%s", err, out)
	}
	b := startBridge(t, nil, runArgs(pg, "bs_pub", tg, "--backfill=skip")...)
	waitSlot(t, conn, "pg2iceberg_bs_pub", b)
	exec1(t, conn, `INSERT INTO t VALUES (11, 'new')`)
	exec1(t, conn, `UPDATE t SET v = 'updated' WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_bs_pub", b)
	b.stop(t)
	if strings.Contains(b.log(), "copy started") {
		t.Errorf("--backfill=skip copied a table; log:\n%s", tail(b.log(), 20))
	}
	compareRows(t, "iceberg-go", "public.t", "id", icegoRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t WHERE id IN (2, 11)"))
	checkChangelog(t, tg, "public.t", 2)
}
