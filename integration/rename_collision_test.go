package integration

import (
	"strings"
	"testing"
)

// A table renamed (with the DDL capture) to a name whose Iceberg table is
// another mirrored table's (u renamed to t__changelog: its mirror would be
// t's changelog) must not overwrite or displace that table, nor stop the
// stream: its Iceberg tables keep their names, with a warning that says
// what to do, and both tables stream on. A rename to a free name then
// renames its Iceberg tables.
func TestRenameIntoAnotherTablesName(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE TABLE u (id int PRIMARY KEY, w text);
		INSERT INTO t VALUES (1, 't1');
		INSERT INTO u VALUES (1, 'u1');
		CREATE PUBLICATION rc_pub FOR TABLE t, u;`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	run := runArgs(pg, "rc_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rc_pub", b)
	exec1(t, conn, `UPDATE t SET v = 't1 before'`)
	waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	before := len(icegoRows(t, tg, "public.t__changelog"))

	exec1(t, conn, `ALTER TABLE u RENAME TO t__changelog`)
	exec1(t, conn, `INSERT INTO t__changelog VALUES (2, 'u2')`)
	exec1(t, conn, `INSERT INTO t VALUES (2, 't2')`)
	waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	warn := lastLine(b.log(), "renamed to a name whose Iceberg table is another table's")
	for _, w := range []string{"table=public.t__changelog", "public.t__changelog", "ALTER TABLE"} {
		if !strings.Contains(warn, w) {
			t.Errorf("the collision warning lacks %q: %q\n%s", w, warn, tail(b.log(), 10))
		}
	}
	cl := icegoRows(t, tg, "public.t__changelog")
	for _, r := range cl {
		if _, ok := r["op"]; !ok {
			t.Errorf("t's changelog holds a row that is not a change: %v", r)
		}
	}
	if len(cl) != before+1 {
		t.Errorf("t's changelog has %d rows, want %d (one insert more)", len(cl), before+1)
	}
	compareRows(t, "iceberg-go", "t", "id", icegoRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t"))
	compareRows(t, "iceberg-go", "u (renamed, kept as public.u)", "id", icegoRows(t, tg, "public.u"), pgRows(t, conn, "id::text AS id, w", "t__changelog"))

	// The way out: a free name.
	exec1(t, conn, `ALTER TABLE t__changelog RENAME TO v`)
	exec1(t, conn, `INSERT INTO v VALUES (3, 'u3')`)
	waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "v (renamed again)", "id", icegoRows(t, tg, "public.v"), pgRows(t, conn, "id::text AS id, w", "v"))
	if n := len(icegoRows(t, tg, "public.t__changelog")); n != before+1 {
		t.Errorf("t's changelog has %d rows after the second rename, want %d", n, before+1)
	}
}
