package integration

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// toastDocs is a table whose body is a 10 kB random text kept out of line
// and uncompressed (STORAGE EXTERNAL), under REPLICA IDENTITY DEFAULT: an
// UPDATE of n alone does not send body.
const toastDocs = `CREATE TABLE docs (id int PRIMARY KEY, n int, body text);
	ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
	CREATE PUBLICATION docs_pub FOR TABLE docs;`

// bigBody is 10,240 random characters.
const bigBody = `(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 320))`

// checkDocs requires the mirror to equal PostgreSQL (body compared by md5).
func checkDocs(t *testing.T, tg target, conn *pgx.Conn, cols string) {
	t.Helper()
	want := pgRows(t, conn, cols, "docs")
	compareRows(t, "iceberg-go", "public.docs", "id", hashRows(icegoRows(t, tg, "public.docs")), want)
}

// docChange is a changelog row of docs, with body by md5.
type docChange struct {
	op, n, body, unavailable string
}

// docChanges returns the U rows of docs' changelog for id, in LSN order.
func docChanges(t *testing.T, tg target, id int) []docChange {
	t.Helper()
	type ranked struct {
		lsn, seq int64
		c        docChange
	}
	var out []ranked
	for _, r := range pyicebergRows(t, tg, "public.docs__changelog") {
		after, _ := r["after"].(map[string]any)
		if r["op"] != "U" || after == nil || fmt.Sprint(after["id"]) != fmt.Sprint(id) {
			continue
		}
		c := docChange{op: "U", n: fmt.Sprint(after["n"]), body: "NULL", unavailable: fmt.Sprint(r["unavailable"])}
		if b, ok := after["body"].(string); ok {
			c.body = md5hex([]byte(b))
		}
		lsn, _ := strconv.ParseInt(fmt.Sprint(r["lsn"]), 10, 64)
		seq, _ := strconv.ParseInt(fmt.Sprint(r["seq"]), 10, 64)
		out = append(out, ranked{lsn, seq, c})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].lsn < out[j].lsn || out[i].lsn == out[j].lsn && out[i].seq < out[j].seq
	})
	cs := make([]docChange, len(out))
	for i, r := range out {
		cs[i] = r.c
	}
	return cs
}

// pgMD5 returns md5(body) of a docs row.
func pgMD5(t *testing.T, conn *pgx.Conn, id int) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), "SELECT md5(body) FROM docs WHERE id = $1", id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// An UPDATE that leaves a TOAST value unchanged, committed after the
// stream's position but before a re-copy's LSN, reaches the changelog only
// (the mirror has the copy). Its old value is nowhere: the changelog row
// has body NULL and names it in unavailable, and the bridge goes on. Here
// the re-copy is the one ADD COLUMN ... DEFAULT starts while streaming.
func TestUnchangedToastAfterDefaultRecopy(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, toastDocs+`INSERT INTO docs SELECT g, 0, `+bigBody+` FROM generate_series(1, 3) g;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "docs_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	exec1(t, conn, `ALTER TABLE docs ADD COLUMN c int DEFAULT 7`)
	// The first change after the ALTER carries the relation message; the
	// re-copy starts there and is taken after this UPDATE commits.
	exec1(t, conn, `UPDATE docs SET n = 1 WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	exec1(t, conn, `UPDATE docs SET n = 2 WHERE id = 1`) // after the copy: read back
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), "copying the table again") {
		t.Fatalf("no re-copy for the default; log:\n%s", tail(b.log(), 20))
	}
	checkDocs(t, tg, conn, "id::text AS id, n::text AS n, md5(body) AS body, c::text AS c")
	want := []docChange{{"U", "1", "NULL", "[body]"}, {"U", "2", pgMD5(t, conn, 1), "<nil>"}}
	if got := docChanges(t, tg, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changelog updates of id 1 (op, n, md5(body), unavailable) = %v, want %v", got, want)
	}
}

// The same after pg2iceberg backfill --table: the UPDATE made while the
// bridge was stopped is older than the copy, so the next run applies it to
// the changelog only.
func TestUnchangedToastAfterBackfill(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, toastDocs+`INSERT INTO docs SELECT g, 0, `+bigBody+` FROM generate_series(1, 3) g;`)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "docs_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s"}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)
	exec1(t, conn, `UPDATE docs SET n = 1 WHERE id = 2`)
	if out, err := runOnce(t, append([]string{"backfill", "--table", "public.docs"}, common...)...); err != nil {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	exec1(t, conn, `UPDATE docs SET n = 2 WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)
	checkDocs(t, tg, conn, "id::text AS id, n::text AS n, md5(body) AS body")
	want := []docChange{{"U", "1", "NULL", "[body]"}, {"U", "2", pgMD5(t, conn, 2), "<nil>"}}
	if got := docChanges(t, tg, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changelog updates of id 2 (op, n, md5(body), unavailable) = %v, want %v", got, want)
	}
}

// resumedCopySource is docs with a 1 kB uncompressed pad per row, so that
// the heap has two copy chunks of 2,048 pages for one worker: ids
// 1-14000 fill the first, the rest (and the large bodies) the second.
const resumedCopySource = `CREATE TABLE docs (id int PRIMARY KEY, n int, body text, pad text);
	ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
	ALTER TABLE docs ALTER COLUMN pad SET STORAGE PLAIN;
	INSERT INTO docs SELECT g, 0, NULL, repeat('p', 1000) FROM generate_series(1, 30000) g;
	INSERT INTO docs SELECT g, 0, ` + bigBody + `, repeat('p', 1000) FROM generate_series(30001, 30010) g;
	CREATE PUBLICATION docs_pub FOR TABLE docs;`

// startResumedCopy kills the bridge after the first chunk of the first
// copy, runs changes while it is down, and starts it again: the copy
// resumes (the rest copied in a new snapshot, the stream replayed from
// the first one). It returns the running bridge.
func startResumedCopy(t *testing.T, tg target, args []string, conn *pgx.Conn, whileDown func()) *bridge {
	t.Helper()
	b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=copy-chunk:1"}, args...)
	b.crashed(t, 3*time.Minute)
	if !strings.Contains(b.log(), `msg="copy chunk committed" table=public.docs pages_from=0 pages_to=2048`) {
		t.Fatalf("the first copy did not stop after its first chunk [0, 2048); log:\n%s", tail(b.log(), 20))
	}
	whileDown()
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	if !strings.Contains(b.log(), `msg="copy resumed`) {
		t.Fatalf("the copy did not resume; log:\n%s", tail(b.log(), 20))
	}
	// A transaction after the copy's second snapshot: the stream passes
	// the point where the mirror is exact.
	exec1(t, conn, `UPDATE docs SET n = n + 1 WHERE id = 30010`)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	return b
}

// A resumed first copy replays the stream from its first snapshot over
// rows copied later. A row updated (body unchanged) and then deleted while
// the bridge was down, in a range not copied yet, is in neither: the
// mirror leaves the updated row out, the DELETE settles it, and the bridge
// goes on without a re-copy.
func TestUnchangedToastResumedCopy(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, resumedCopySource)
	tg := localTarget(t)
	args := runArgs(pg, "docs_pub", tg, "--backfill-workers", "1")
	b := startResumedCopy(t, tg, args, conn, func() {
		exec1(t, conn, `UPDATE docs SET n = 1 WHERE id = 30001`)
		exec1(t, conn, `DELETE FROM docs WHERE id = 30001`)
		exec1(t, conn, `UPDATE docs SET n = 1 WHERE id = 30002`) // stays: read back from the new copy
	})
	b.stop(t)
	if strings.Contains(b.log(), "copying the table again") {
		t.Errorf("the table was copied again; log:\n%s", tail(b.log(), 20))
	}
	checkDocs(t, tg, conn, "id::text AS id, n::text AS n, md5(body) AS body, pad")
}

// An UPDATE (body unchanged) that moves a row into a range the first part
// of a resumed copy had already copied, while the bridge is down, puts the
// row in neither part of the copy, and the value is nowhere in the stream:
// the mirror cannot be exact from the stream, so once the stream passes
// the copy's second snapshot the table is copied again.
func TestUnchangedToastMovedDuringResumedCopy(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, resumedCopySource)
	tg := localTarget(t)
	args := runArgs(pg, "docs_pub", tg, "--backfill-workers", "1")
	b := startResumedCopy(t, tg, args, conn, func() {
		// Free space in the first range, then make row 30003 too large
		// for its page: the new version goes where there is room.
		exec1(t, conn, `DELETE FROM docs WHERE id <= 2000`)
		waitNoSnapshots(t, conn) // the killed bridge's copy backend may still hold one
		exec1(t, conn, `VACUUM docs`)
		exec1(t, conn, `UPDATE docs SET pad = repeat('q', 2000) WHERE id = 30003`)
		var page int64
		if err := conn.QueryRow(context.Background(), `SELECT (ctid::text::point)[0]::bigint FROM docs WHERE id = 30003`).Scan(&page); err != nil {
			t.Fatal(err)
		}
		if page >= 2048 {
			t.Fatalf("row 30003 stayed on page %d, not in the first chunk", page)
		}
	})
	b.stop(t)
	if !strings.Contains(b.log(), "copying the table again") {
		t.Errorf("the table was not copied again; log:\n%s", tail(b.log(), 20))
	}
	checkDocs(t, tg, conn, "id::text AS id, n::text AS n, md5(body) AS body, pad")
}

// waitNoSnapshots waits until no other session of the server holds a
// snapshot or a transaction: a backend of a killed bridge goes on until
// it next writes to its closed socket, and while it holds its snapshot
// VACUUM keeps the rows it could see.
func waitNoSnapshots(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d other sessions still hold a snapshot after a minute", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
