package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"
)

const usersSchema = `CREATE SCHEMA app;
	CREATE TABLE app.users (id int PRIMARY KEY, a text, b text);
	INSERT INTO app.users SELECT g, 'a' || g, 'b' || g FROM generate_series(1, 200) g;
	CREATE PUBLICATION app_pub FOR TABLE app.users;`

const usersSlot = "pg2iceberg_app_pub"

// startUsers starts a PostgreSQL with app.users in publication app_pub
// (then runs extraSQL) and a bridge streaming it into a local warehouse. common holds the flags
// every command takes, run the bridge's command line.
func startUsers(t *testing.T, extraSQL string) (conn *pgx.Conn, tg target, common, run []string, b *bridge) {
	t.Helper()
	return startUsersAt(t, localTarget(t), extraSQL)
}

// startUsersAt is startUsers into tg; the bridge gets tg's environment
// (the S3 keys), and so must every command the caller runs.
func startUsersAt(t *testing.T, tg target, extraSQL string) (conn *pgx.Conn, _ target, common, run []string, b *bridge) {
	t.Helper()
	pg, conn := startSource(t, usersSchema+extraSQL)
	common = append([]string{"--source", pg.SuperURL("postgres"), "--publication", "app_pub"}, tg.args()...)
	run = append([]string{"run", "--flush-interval", "1s"}, common...)
	b = startBridge(t, tg.env(), run...)
	waitSlot(t, conn, usersSlot, b)
	return conn, tg, common, run, b
}

// fieldIDs maps a table's top-level column names to their field IDs.
func fieldIDs(t *testing.T, tg target, table string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, table) {
		ids[f.Name] = f.ID
	}
	return ids
}

// backfillUsers runs pg2iceberg backfill --table app.users and requires it
// to succeed.
func backfillUsers(t *testing.T, common []string) {
	t.Helper()
	out, err := runOnce(t, append([]string{"backfill", "--table", "app.users"}, common...)...)
	if err != nil || !strings.Contains(out, "table sync finished") {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
}

// checkUsers requires the mirror of app.users to have the columns
// id,a,c,d, c with b's old field ID (the rename is proven by its attnum),
// and to equal PostgreSQL read by pyiceberg and iceberg-go.
func checkUsers(t *testing.T, tg target, conn *pgx.Conn, bID int, step string) {
	t.Helper()
	ids := fieldIDs(t, tg, "app.users")
	if got := names(pyicebergSchema(t, tg, "app.users")); got != "id,a,c,d" {
		t.Fatalf("%s: mirror columns %s, want id,a,c,d", step, got)
	}
	if ids["c"] != bID {
		t.Errorf("%s: c has field id %d, want %d (b's: the catalog proves the rename)", step, ids["c"], bID)
	}
	want := pgRows(t, conn, `id::text AS id, a, c, d::text AS d`, "app.users")
	compareRows(t, "pyiceberg "+step, "app.users", "id", pyicebergRows(t, tg, "app.users"), want)
	compareRows(t, "iceberg-go "+step, "app.users", "id", icegoRows(t, tg, "app.users"), want)
}

// The scenario of issue 15.1: RENAME COLUMN b TO c and ADD COLUMN d with a
// default while the bridge is stopped, without the DDL capture. run
// refuses at start (the stream could not follow the rename), and names
// the way out; backfill --table brings the Iceberg schema in line before
// it copies (c keeps b's field ID, d is added) instead of writing b as
// NULL and leaving c and d out. The next run streams on; the changelog
// keeps the changes made before the rename under the renamed field.
func TestBackfillAfterSchemaChange(t *testing.T) {
	t.Parallel()
	conn, tg, common, run, b := startUsers(t, "")
	exec1(t, conn, `UPDATE app.users SET b = 'early ' || id WHERE id BETWEEN 100 AND 110`)
	waitCaughtUp(t, conn, usersSlot, b)
	b.stop(t)
	bID := fieldIDs(t, tg, "app.users")["b"]

	exec1(t, conn, `UPDATE app.users SET b = 'stopped ' || id WHERE id <= 5`)
	exec1(t, conn, `ALTER TABLE app.users RENAME COLUMN b TO c; ALTER TABLE app.users ADD COLUMN d int DEFAULT 7`)
	exec1(t, conn, `UPDATE app.users SET c = 'after ' || id WHERE id BETWEEN 6 AND 10`)

	b = startBridge(t, nil, run...)
	b.exited(t, time.Minute)
	for _, w := range []string{"app.users", "column b was renamed to c", "pg2iceberg backfill --table app.users"} {
		if !strings.Contains(b.log(), w) {
			t.Fatalf("run after a rename without the DDL capture: the error does not say %q; log:\n%s", w, tail(b.log(), 15))
		}
	}
	t.Logf("run refused: %s", lastLine(b.log(), "renamed"))

	backfillUsers(t, common)
	checkUsers(t, tg, conn, bID, "after the backfill")

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, usersSlot, b)
	exec1(t, conn, `UPDATE app.users SET c = 'streamed ' || id, d = id WHERE id BETWEEN 20 AND 30`)
	exec1(t, conn, `DELETE FROM app.users WHERE id = 199`)
	waitCaughtUp(t, conn, usersSlot, b)
	b.stop(t)
	checkUsers(t, tg, conn, bID, "after streaming on")

	// The changelog follows the same rename when the stream reaches it:
	// the changes from before it keep their values, under c.
	changes := pyicebergRows(t, tg, "app.users__changelog")
	last := rowsKey(lastImages(t, changes, "id"), "id")
	for id := 1; id <= 5; id++ {
		if got, want := fmt.Sprint(last[fmt.Sprint(id)]["c"]), fmt.Sprintf("stopped %d", id); got != want {
			t.Errorf("changelog: change of id %d made before the rename has c = %s, want %s", id, got, want)
		}
	}
	want := pgRows(t, conn, `id::text AS id, a, c, d::text AS d`, "app.users WHERE id BETWEEN 6 AND 10 OR id BETWEEN 20 AND 30")
	var got []row
	for _, r := range want {
		got = append(got, last[fmt.Sprint(r["id"])])
	}
	compareRows(t, "pyiceberg (changelog's last images)", "app.users__changelog", "id", got, want)
	ops := map[string]int{}
	for _, c := range changes {
		ops[fmt.Sprint(c["op"])]++
	}
	if ops["R"] != 1 || ops["D"] != 1 || ops["U"] != 11+5+5+11 {
		t.Errorf("changelog ops %v: want one R (the re-copy), 1 D and %d U", ops, 11+5+5+11)
	}
}

// The rename dead end of issue 15.3: a rename without the DDL capture
// stops the bridge at the table's next row change with an error that names
// the table and the columns and says what to run; doing that (backfill
// --table, then run) brings the mirror back to PostgreSQL and streaming
// continues.
func TestRenameWithoutCapture(t *testing.T) {
	t.Parallel()
	conn, tg, common, run, b := startUsers(t, "")
	waitCaughtUp(t, conn, usersSlot, b)
	bID := fieldIDs(t, tg, "app.users")["b"]

	exec1(t, conn, `ALTER TABLE app.users RENAME COLUMN b TO c`)
	exec1(t, conn, `ALTER TABLE app.users ADD COLUMN d int DEFAULT 7`)
	exec1(t, conn, `UPDATE app.users SET c = 'renamed ' || id WHERE id <= 3`)
	b.exited(t, time.Minute)
	for _, w := range []string{"app.users: columns b disappeared and c, d appeared", "pg2iceberg backfill --table app.users", "pg2iceberg setup"} {
		if !strings.Contains(b.log(), w) {
			t.Fatalf("a rename without the DDL capture: the error does not say %q; log:\n%s", w, tail(b.log(), 15))
		}
	}
	if strings.Contains(b.log(), "drop the Iceberg tables") {
		t.Errorf("the error still points at dropping the Iceberg tables, which no command does:\n%s", lastLine(b.log(), "disappeared"))
	}
	t.Logf("the bridge stopped: %s", lastLine(b.log(), "disappeared"))

	backfillUsers(t, common)
	checkUsers(t, tg, conn, bID, "after the backfill")
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, usersSlot, b)
	exec1(t, conn, `UPDATE app.users SET c = 'streamed ' || id, d = -id WHERE id BETWEEN 50 AND 60`)
	waitCaughtUp(t, conn, usersSlot, b)
	b.stop(t)
	checkUsers(t, tg, conn, bID, "after streaming on")
	last := rowsKey(lastImages(t, pyicebergRows(t, tg, "app.users__changelog"), "id"), "id")
	for _, id := range []int{1, 2, 3, 50, 60} {
		want := pgRows(t, conn, `id::text AS id, a, c, d::text AS d`, fmt.Sprintf("app.users WHERE id = %d", id))
		compareRows(t, "pyiceberg (changelog's last image)", "app.users__changelog", "id", []row{last[fmt.Sprint(id)]}, want)
	}

	// A rename the catalog cannot prove (e was added by the stream, which
	// has no attnum for it) is a drop and an add: f is a new field, and
	// the snapshots before the copy keep e's values.
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, usersSlot, b)
	exec1(t, conn, `ALTER TABLE app.users ADD COLUMN e text`)
	exec1(t, conn, `UPDATE app.users SET e = 'e' || id WHERE id <= 20`)
	waitCaughtUp(t, conn, usersSlot, b)
	eID := fieldIDs(t, tg, "app.users")["e"]
	pre := loadTable(t, tg, "app.users").CurrentSnapshot().SnapshotID
	exec1(t, conn, `ALTER TABLE app.users RENAME COLUMN e TO f`)
	exec1(t, conn, `UPDATE app.users SET f = 'f' || id WHERE id <= 2`)
	b.exited(t, time.Minute)
	if !strings.Contains(b.log(), "app.users: columns e disappeared and f appeared") {
		t.Fatalf("the second rename: log:\n%s", tail(b.log(), 10))
	}
	backfillUsers(t, common)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, usersSlot, b)
	exec1(t, conn, `UPDATE app.users SET f = 'streamed' WHERE id = 5`)
	waitCaughtUp(t, conn, usersSlot, b)
	b.stop(t)
	ids := fieldIDs(t, tg, "app.users")
	if got := names(pyicebergSchema(t, tg, "app.users")); got != "id,a,c,d,f" {
		t.Fatalf("mirror columns %s, want id,a,c,d,f", got)
	}
	if ids["f"] == eID || ids["c"] != bID {
		t.Errorf("field ids %v: want f new (not e's %d), c = b's %d", ids, eID, bID)
	}
	want := pgRows(t, conn, `id::text AS id, a, c, d::text AS d, f`, "app.users")
	compareRows(t, "pyiceberg after the unproven rename", "app.users", "id", pyicebergRows(t, tg, "app.users"), want)
	compareRows(t, "iceberg-go after the unproven rename", "app.users", "id", icegoRows(t, tg, "app.users"), want)
	cl := rowsKey(lastImages(t, pyicebergRows(t, tg, "app.users__changelog"), "id"), "id")
	if cl["1"]["f"] != "f1" || cl["5"]["f"] != "streamed" {
		t.Errorf("changelog's last images after the unproven rename: id 1 %v, id 5 %v; want f = f1 and streamed", cl["1"], cl["5"])
	}
	var withE int
	for _, r := range icegoScan(t, loadTable(t, tg, "app.users"), table.WithSnapshotID(pre)) {
		if id := fmt.Sprint(r["id"]); r["e"] == "e"+id {
			withE++
		}
	}
	if withE != 20 {
		t.Errorf("time travel to snapshot %d (before the copy): %d rows with e's value, want 20", pre, withE)
	}
}
