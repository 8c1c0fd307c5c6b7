package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// What a streamed transaction may hold that applying it ahead does not
// handle — a TRUNCATE, an ADD COLUMN followed by rows that use it, an
// UPDATE that leaves a TOAST value unchanged — makes the bridge give the
// speculation up, with the reason in the log, and apply the transaction
// from its spool at its commit. Each ends with the mirror equal to
// PostgreSQL (the unchanged TOAST values kept, the new column filled) and
// every change once in the changelog.
func TestStreamedTransactionFallbacks(t *testing.T) {
	t.Parallel()
	// doc holds 8 kB of md5 text, which does not compress below the TOAST
	// threshold, so it is stored out of line and an UPDATE that leaves it
	// alone sends it as unchanged.
	pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE big (id int PRIMARY KEY, v text, doc text);
		CREATE TABLE other (id int PRIMARY KEY);
		INSERT INTO big SELECT g, 'old', (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 256) i)
			FROM generate_series(1, 200) g;
		INSERT INTO other SELECT generate_series(1, 10);
		CREATE PUBLICATION big_pub FOR TABLE big, other;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "big_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_big_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)

	var changes int64 // of big
	// streamed runs stmts in one transaction large enough to stream, and
	// returns its xid.
	streamed := func(first int, stmts ...string) int64 {
		t.Helper()
		stmts = append([]string{fmt.Sprintf("INSERT INTO big (id, v) SELECT g, 'bulk' FROM generate_series(%d, %d) g", first, first+19999)}, stmts...)
		xid, tags := runTx(t, conn, "COMMIT", nil, stmts...)
		for i, tag := range tags {
			if strings.Contains(stmts[i], " big") {
				changes += rowChanges(tag)
			}
		}
		return xid
	}
	cases := []struct {
		name, reason string
		xid          int64
	}{
		{name: "truncate", reason: "a 'T' message in the transaction", xid: streamed(100_000,
			"TRUNCATE other",
			"INSERT INTO big (id, v) SELECT g, 'after truncate' FROM generate_series(130000, 130099) g")},
		{name: "add column", reason: "table public.big changed or is new", xid: streamed(200_000,
			"ALTER TABLE big ADD COLUMN extra int",
			"UPDATE big SET extra = id % 7 WHERE id BETWEEN 200000 AND 200999")},
		{name: "unchanged toast", reason: "unchanged TOAST value", xid: streamed(300_000,
			"UPDATE big SET v = 'toast kept' WHERE id <= 100")},
	}
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
	b.stop(t)

	log := b.log()
	for _, c := range cases {
		givenUp(t, log, c.name, c.xid, c.reason)
	}
	want := pgRows(t, conn, "id, v, doc, extra", "public.big")
	compareRows(t, "iceberg-go", "public.big", "id", icegoRows(t, tg, "public.big"), want)
	compareRows(t, "pyiceberg", "public.big", "id", pyicebergRows(t, tg, "public.big"), want)
	if got := pyicebergRows(t, tg, "public.other"); len(got) != 0 {
		t.Errorf("public.other has %d rows after the TRUNCATE, want 0", len(got))
	}
	checkChangelog(t, tg, "public.big", changes)
}

// givenUp requires the log to say that streamed transaction xid was given
// up ahead for reason (what: the case, for messages).
func givenUp(t *testing.T, log, what string, xid int64, reason string) {
	t.Helper()
	line := fmt.Sprintf(`msg="streamed transaction will be applied at its commit" xid=%d `, xid)
	i := strings.Index(log, line)
	if i < 0 {
		t.Errorf("%s: transaction %d was not given up ahead; log:\n%s", what, xid, tail(log, 30))
		return
	}
	end := strings.IndexByte(log[i:], '\n')
	if end < 0 {
		end = len(log) - i
	}
	if !strings.Contains(log[i:i+end], reason) {
		t.Errorf("%s: given up for another reason: %s", what, log[i:i+end])
	}
	t.Logf("%s: %s", what, log[i:i+end])
}

// The two limits of applying a streamed transaction ahead, reached in a
// failpoints build without writing 8M rows or waiting for midnight (see
// iceberg/spec_failpoints.go): a transaction of more changes than the
// cap, and one that commits on another day than the speculation guessed
// (its changelog files were written for that day's partition). Each is
// given up with its reason and applied at its commit; a transaction under
// the cap is still applied ahead. The mirror equals PostgreSQL, the
// changelog has every change once, and its files are in the partition of
// the day their rows committed on.
func TestStreamedTransactionLimits(t *testing.T) {
	t.Parallel()
	pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE big (id int PRIMARY KEY, v text);
		CREATE PUBLICATION big_pub FOR TABLE big;`)
	tg := localTarget(t)
	const slot = "pg2iceberg_big_pub"
	var changes int64
	bulk := func(first, n int) int64 {
		t.Helper()
		xid, tags := runTx(t, conn, "COMMIT", nil, fmt.Sprintf("INSERT INTO big SELECT g, 'bulk' FROM generate_series(%d, %d) g", first, first+n-1))
		changes += rowChanges(tags[0])
		return xid
	}

	b := startBridge(t, []string{"PG2ICEBERG_TEST_SPEC_MAX_CHANGES=25000"}, runArgs(pg, "big_pub", tg)...)
	waitSlot(t, conn, slot, b)
	under, over := bulk(1, 20_000), bulk(100_000, 30_000)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	log := b.log()
	if !strings.Contains(log, fmt.Sprintf(`msg="streamed transaction applied ahead" xid=%d changes=20000 `, under)) {
		t.Errorf("transaction %d (20,000 changes, under the cap) was not applied ahead; log:\n%s", under, tail(log, 30))
	}
	givenUp(t, log, "change cap", over, "more than 25000 changes")

	b = startBridge(t, []string{"PG2ICEBERG_TEST_SPEC_DAY_SHIFT=-1"}, runArgs(pg, "big_pub", tg)...)
	waitSlot(t, conn, slot, b)
	yesterday := bulk(200_000, 20_000)
	exec1(t, conn, "UPDATE big SET v = 'small' WHERE id <= 10")
	changes += 10
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	givenUp(t, b.log(), "day boundary", yesterday, "committed on another day")

	want := pgRows(t, conn, "id, v", "public.big")
	compareRows(t, "iceberg-go", "public.big", "id", icegoRows(t, tg, "public.big"), want)
	checkChangelogExact(t, tg, "public.big", changes)
	var today int
	day := time.Now().UTC().Format("2006-01-02")
	for p := range snapshotFiles(t, icegoTable(t, tg, "public.big__changelog"), true) {
		if !strings.Contains(p, "/commit_ts_day="+day+"/") {
			t.Errorf("changelog file %s is not in today's partition (%s)", p, day)
		}
		today++
	}
	if today == 0 {
		t.Errorf("the changelog has no files")
	}
}
