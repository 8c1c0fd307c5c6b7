package integration

import (
	"context"
	"strings"
	"testing"
)

// A table with no key or replica identity in a publication that publishes
// updates and deletes: PostgreSQL refuses the application's DELETE on it,
// and the bridge warns about exactly that at start, with what to do. It is
// not copied (there is no mirror to copy into) and says so instead of
// reading every row for nothing; its changelog records the inserts; and
// backfill --table on it is an error that says why.
func TestKeylessTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE docs (id int, body text);
		INSERT INTO docs SELECT g, 'doc ' || g FROM generate_series(1, 1000) g;
		CREATE TABLE keyed (id int PRIMARY KEY, v text);
		INSERT INTO keyed VALUES (1, 'a');
		CREATE PUBLICATION mixed_pub FOR TABLE docs, keyed;
		CREATE PUBLICATION docs_pub FOR TABLE docs;`)
	if _, err := conn.Exec(ctx, `DELETE FROM docs WHERE id = 1`); err == nil || !strings.Contains(err.Error(), "does not have a replica identity") {
		t.Fatalf("DELETE on the keyless published table: error = %v, want PostgreSQL's replica identity error", err)
	}
	tg := localTarget(t)
	args := runArgs(pg, "mixed_pub", tg)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_mixed_pub", b)
	exec1(t, conn, `INSERT INTO docs SELECT g, 'new ' || g FROM generate_series(1001, 1010) g`)
	exec1(t, conn, `UPDATE keyed SET v = 'b'`)
	waitCaughtUp(t, conn, "pg2iceberg_mixed_pub", b)
	b.stop(t)
	log := b.log()
	warn := lastLine(log, "PostgreSQL refuses the application's UPDATE or DELETE")
	for _, w := range []string{"table=public.docs", "refused=\"UPDATE, DELETE\"", `ALTER TABLE \"public\".\"docs\" REPLICA IDENTITY FULL`, `ALTER PUBLICATION \"mixed_pub\" DROP TABLE \"public\".\"docs\"`} {
		if !strings.Contains(warn, w) {
			t.Errorf("the keyless warning lacks %q: %q", w, warn)
		}
	}
	if strings.Contains(log, `msg="copy started" table=public.docs`) {
		t.Errorf("the keyless table was read by a copy:\n%s", tail(log, 20))
	}
	if !strings.Contains(log, `msg="table not copied: it has no primary key or replica identity, so it has no mirror, and its changelog records changes, not existing rows" table=public.docs`) {
		t.Errorf("the bridge did not say that the keyless table is not copied:\n%s", tail(log, 20))
	}
	if n := len(icegoRows(t, tg, "public.docs__changelog")); n != 10 {
		t.Errorf("changelog of docs has %d rows, want the 10 inserts", n)
	}

	out, err := runOnce(t, append([]string{"backfill", "--table", "public.docs", "--source", pg.SuperURL("postgres"), "--publication", "mixed_pub"}, tg.args()...)...)
	if err == nil {
		t.Fatalf("backfill of the keyless table succeeded; output:\n%s", out)
	}
	for _, w := range []string{"public.docs has no primary key or replica identity", `ALTER TABLE "public"."docs" REPLICA IDENTITY FULL`} {
		if !strings.Contains(out, w) {
			t.Errorf("backfill error lacks %q:\n%s", w, out)
		}
	}

	// A publication of keyless tables only may publish inserts only.
	tg2 := localTarget(t)
	b = startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "docs_pub"}, tg2.args()...)...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)
	if warn := lastLine(b.log(), "PostgreSQL refuses"); !strings.Contains(warn, `ALTER PUBLICATION \"docs_pub\" SET (publish = 'insert, truncate')`) {
		t.Errorf("the keyless warning for a keyless-only publication does not suggest publishing inserts only: %q", warn)
	}
	exec1(t, conn, `ALTER PUBLICATION docs_pub SET (publish = 'insert, truncate')`)
	b = startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "docs_pub"}, tg2.args()...)...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)
	if strings.Contains(b.log(), "PostgreSQL refuses") {
		t.Errorf("warned about refused updates with publish = 'insert, truncate':\n%s", tail(b.log(), 10))
	}
}
