package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// compareBag requires got and want to hold the same rows as many times
// each (tables without a unique key may hold a row more than once), and
// reports whether they do.
func compareBag(t *testing.T, reader, table string, got, want []row) bool {
	t.Helper()
	text := func(rows []row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			b, err := json.Marshal(r) // keys sorted
			if err != nil {
				t.Fatal(err)
			}
			out[i] = string(b)
		}
		slices.Sort(out)
		return out
	}
	g, w := text(got), text(want)
	if slices.Equal(g, w) {
		t.Logf("%s read of %s: %d rows equal to PostgreSQL", reader, table, len(g))
		return true
	}
	t.Errorf("%s read of %s differs from PostgreSQL:\n got %d rows: %s\nwant %d rows: %s", reader, table, len(g), strings.Join(g, " "), len(w), strings.Join(w, " "))
	return false
}

// checkBag compares a mirror read by pyiceberg and iceberg-go with the
// Postgres table.
func checkBag(t *testing.T, tg target, mirror string, want []row) {
	t.Helper()
	compareBag(t, "pyiceberg", mirror, pyicebergRows(t, tg, mirror), want)
	compareBag(t, "iceberg-go", mirror, icegoRows(t, tg, mirror), want)
}

// A table with REPLICA IDENTITY FULL and no primary key is mirrored by
// the whole row: equal rows are counted (inserted and deleted one at a
// time, each delete removes one), NULLs are values like any other (rows
// with NULLs are updated and deleted), a column added or dropped keeps the
// mirror exact, and all of it survives a clean restart (the index file)
// and a SIGKILL (the index rebuilt from the table). Tables of that kind
// that appear while streaming never stop the bridge: one whose columns
// cannot all be compared (an array) gets a changelog only, with a warning.
func TestDuplicateRows(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE dup (a int, b text, c numeric(10,2));
		ALTER TABLE dup REPLICA IDENTITY FULL;
		INSERT INTO dup VALUES (1, 'x', 1.5), (1, 'x', 1.5), (1, 'x', 1.5), (2, NULL, NULL), (2, NULL, NULL),
			(NULL, NULL, NULL), (NULL, NULL, NULL), (3, 'y', NULL), (NULL, 'x', 1.5);
		CREATE PUBLICATION dup_pub FOR ALL TABLES;`)
	tg := localTarget(t)
	run := runArgs(pg, "dup_pub", tg)
	const slot = "pg2iceberg_dup_pub"
	one := func(where string) string { return "ctid = (SELECT ctid FROM dup WHERE " + where + " LIMIT 1)" }
	check := func(step string) {
		t.Helper()
		want := pgRows(t, conn, "a::text AS a, b, c::text AS c", "dup")
		t.Logf("after %s", step)
		checkBag(t, tg, "public.dup", want)
	}

	b := startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	for range 3 {
		exec1(t, conn, `INSERT INTO dup VALUES (4, 'z', 0)`)
	}
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 1"))
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 4"))
	exec1(t, conn, `UPDATE dup SET c = 9 WHERE `+one("a = 2"))
	exec1(t, conn, `UPDATE dup SET b = 'was null' WHERE `+one("a IS NULL AND b IS NULL"))
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a IS NULL AND b IS NULL"))
	exec1(t, conn, `UPDATE dup SET a = 5 WHERE a = 4`) // both equal rows at once
	exec1(t, conn, `INSERT INTO dup VALUES (NULL, NULL, NULL), (NULL, NULL, NULL)`)
	// A table of this kind that appears while streaming, with NULLs, and
	// one with a column no key can hold.
	exec1(t, conn, `CREATE TABLE dup2 (a int, b text); ALTER TABLE dup2 REPLICA IDENTITY FULL`)
	exec1(t, conn, `INSERT INTO dup2 VALUES (1, NULL), (1, NULL), (NULL, NULL)`)
	exec1(t, conn, `CREATE TABLE dup3 (a int, tags int[]); ALTER TABLE dup3 REPLICA IDENTITY FULL`)
	exec1(t, conn, `INSERT INTO dup3 VALUES (1, '{1,2}'), (1, '{1,2}')`)
	waitLog(t, b, `msg="table sync finished" table=public.dup2`)
	exec1(t, conn, `DELETE FROM dup2 WHERE ctid = (SELECT ctid FROM dup2 WHERE a = 1 LIMIT 1)`)
	exec1(t, conn, `DELETE FROM dup3 WHERE ctid = (SELECT ctid FROM dup3 LIMIT 1)`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	check("streaming")
	checkBag(t, tg, "public.dup2", pgRows(t, conn, "a::text AS a, b", "dup2"))
	if !strings.Contains(b.log(), `table=public.dup3`) || !strings.Contains(b.log(), "gets a changelog only") {
		t.Errorf("no warning that dup3 gets a changelog only:\n%s", tail(b.log(), 20))
	}
	if got := changelogOps(t, tg, "public.dup3__changelog"); got != "D,I,I" {
		t.Errorf("dup3 changelog ops %s, want D,I,I", got)
	}

	// A clean restart loads the index from its file; a column added and
	// one dropped (after which rows that differed in it are equal).
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 5"))
	exec1(t, conn, `ALTER TABLE dup ADD COLUMN d int`)
	exec1(t, conn, `UPDATE dup SET d = 1 WHERE `+one("a = 1"))
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 1 AND d IS NULL"))
	waitCaughtUp(t, conn, slot, b)
	exec1(t, conn, `ALTER TABLE dup DROP COLUMN c`)
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 2"))
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	for _, want := range []string{`msg="key index loaded" table=public.dup `, `msg="column dropped from a mirror kept by the whole row: copying the table again`} {
		if !strings.Contains(b.log(), want) {
			t.Errorf("log lacks %s:\n%s", want, tail(b.log(), 20))
		}
	}
	wantRows := func() []row { return pgRows(t, conn, "a::text AS a, b, d::text AS d", "dup") }
	checkBag(t, tg, "public.dup", wantRows())

	// Killed: the restart rebuilds the index from the table.
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `INSERT INTO dup VALUES (7, 'k', NULL), (7, 'k', NULL)`)
	waitCaughtUp(t, conn, slot, b)
	b.kill()
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	if !strings.Contains(b.log(), `msg="key index rebuilt" table=public.dup`) {
		t.Errorf("the index was not rebuilt after SIGKILL:\n%s", tail(b.log(), 20))
	}
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a = 7"))
	exec1(t, conn, `DELETE FROM dup WHERE `+one("a IS NULL AND b IS NULL"))
	exec1(t, conn, `UPDATE dup SET b = 'last' WHERE `+one("a = 2"))
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	checkBag(t, tg, "public.dup", wantRows())
}

// A DEFERRABLE primary key may hold a key twice inside a transaction
// (UPDATE t SET id = id + 1 with the check deferred), so under REPLICA
// IDENTITY FULL the mirror is kept by the whole row, which the full old row
// of every change names exactly. Under REPLICA IDENTITY DEFAULT PostgreSQL
// does not use a deferrable primary key as the replica identity and
// refuses UPDATE and DELETE on the table: the mirror, kept by the primary
// key, holds the inserts, and a warning says what to run. With the DDL
// capture, REPLICA IDENTITY FULL set on that table re-keys its mirror by
// the whole row at the ALTER's commit, before the next UPDATE, and set on
// a table without a key gives it a mirror.
func TestDeferrableKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE df (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, v text);
		ALTER TABLE df REPLICA IDENTITY FULL;
		INSERT INTO df SELECT g, 'v' || g FROM generate_series(1, 20) g;
		CREATE TABLE dd (id int PRIMARY KEY DEFERRABLE, v text);
		INSERT INTO dd SELECT g, 'v' || g FROM generate_series(1, 5) g;
		CREATE TABLE nk (a int, b text);
		INSERT INTO nk VALUES (1, NULL), (1, NULL);
		CREATE PUBLICATION df_pub FOR TABLE df, dd, nk;`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	run := runArgs(pg, "df_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_df_pub", b)
	exec1(t, conn, `UPDATE df SET id = id + 1`)
	exec1(t, conn, `UPDATE df SET id = CASE id WHEN 2 THEN 3 ELSE 2 END WHERE id IN (2, 3)`)
	if err := pg.Exec(ctx, `BEGIN; UPDATE df SET id = id + 1 WHERE id > 10; INSERT INTO df VALUES (11, 'new'); DELETE FROM df WHERE id = 5; COMMIT;`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `INSERT INTO dd VALUES (6, 'v6')`)
	if _, err := conn.Exec(ctx, `UPDATE dd SET v = 'x' WHERE id = 1`); err == nil || !strings.Contains(err.Error(), "does not have a replica identity") {
		t.Errorf("UPDATE of a table whose only key is a deferrable primary key, under REPLICA IDENTITY DEFAULT: %v, want PostgreSQL's refusal", err)
	}
	waitCaughtUp(t, conn, "pg2iceberg_df_pub", b)
	b.stop(t)
	want := pgRows(t, conn, "id::text AS id, v", "df")
	compareRows(t, "pyiceberg", "df", "id", pyicebergRows(t, tg, "public.df"), want)
	compareRows(t, "iceberg-go", "df", "id", icegoRows(t, tg, "public.df"), want)
	want = pgRows(t, conn, "id::text AS id, v", "dd")
	compareRows(t, "pyiceberg", "dd", "id", pyicebergRows(t, tg, "public.dd"), want)
	if !strings.Contains(b.log(), `ALTER TABLE \"public\".\"dd\" DROP CONSTRAINT \"dd_pkey\", ADD PRIMARY KEY (\"id\")`) {
		t.Errorf("no warning saying how to make dd's key usable:\n%s", tail(b.log(), 20))
	}

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_df_pub", b)
	exec1(t, conn, `ALTER TABLE dd REPLICA IDENTITY FULL`)
	if err := pg.Exec(ctx, `BEGIN; SET CONSTRAINTS ALL DEFERRED; UPDATE dd SET id = id + 1; DELETE FROM dd WHERE id = 3; COMMIT;`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `ALTER TABLE nk REPLICA IDENTITY FULL`)
	waitLog(t, b, `msg="table sync finished" table=public.nk`)
	exec1(t, conn, `INSERT INTO nk VALUES (1, NULL)`)
	exec1(t, conn, `DELETE FROM nk WHERE ctid = (SELECT ctid FROM nk LIMIT 1)`)
	waitCaughtUp(t, conn, "pg2iceberg_df_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), `msg="key changed: key index rebuilt" table=public.dd from=id to="whole row"`) {
		t.Errorf("dd not re-keyed by the whole row:\n%s", tail(b.log(), 20))
	}
	want = pgRows(t, conn, "id::text AS id, v", "dd")
	compareRows(t, "pyiceberg", "dd (REPLICA IDENTITY FULL)", "id", pyicebergRows(t, tg, "public.dd"), want)
	compareRows(t, "iceberg-go", "dd (REPLICA IDENTITY FULL)", "id", icegoRows(t, tg, "public.dd"), want)
	checkBag(t, tg, "public.nk", pgRows(t, conn, "a::text AS a, b", "nk"))
}
