package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// schemas is the mirror's and the changelog's current schema (field IDs,
// names, types) and whether either is marked dropped.
func schemas(t *testing.T, tg target, table string) string {
	t.Helper()
	var out []string
	for _, name := range []string{table, table + "__changelog"} {
		tbl := loadTable(t, tg, name)
		out = append(out, name+": "+tbl.Schema().String()+" dropped="+tbl.Properties()[iceberg.PropDropped])
	}
	return strings.Join(out, "\n")
}

// forgedDDL is what a role without privileges can emit as pg2iceberg.ddl
// messages about table relid: malformed JSON, a DROP TABLE, a column list
// with only the key, and a DROP TABLE with a made-up signature.
func forgedDDL(relid uint32) []string {
	drop := fmt.Sprintf(`{"relid": %d, "tag": "DROP TABLE", "schema": "public", "table": "people"}`, relid)
	return []string{
		`{"relid": ` + strings.Repeat("9", 5000),
		drop,
		fmt.Sprintf(`{"relid": %d, "tag": "ALTER TABLE", "schema": "public", "table": "people", "columns": [{"attnum": 1, "name": "id", "type_oid": 23, "typmod": -1, "not_null": true, "generated": false, "key": true}]}`, relid),
		"sig:" + strings.Repeat("0", 64) + "\n" + drop,
	}
}

func emitDDL(t *testing.T, c *pgx.Conn, content string) {
	t.Helper()
	exec1(t, c, `SELECT pg_logical_emit_message(true, 'pg2iceberg.ddl', $1::text)`, content)
}

// A role that can log in and nothing more emits pg2iceberg.ddl messages:
// malformed, DROP TABLE, a column list of only the key, a made-up
// signature, one inside a large (streamed) transaction, and a genuine
// event's content copied into its own transaction. The bridge (a role
// that is not a superuser, granted the key by setup --grant-to) ignores
// each with a warning and a count: the mirror's and the changelog's
// schemas stay, and so do their rows, and row changes after them arrive.
// A restart that replays forged messages from the slot goes on too.
// Genuine DDL through the trigger still applies exactly, also a rename in
// a subtransaction of a streamed transaction, and a role's DDL on its own
// table still works.
func TestForgedDDLEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{Settings: map[string]string{"logical_decoding_work_mem": "64kB"}})
	if err := pg.Exec(ctx, `CREATE TABLE people (id int PRIMARY KEY, name text, age int);
		INSERT INTO people SELECT g, 'p' || g, g FROM generate_series(1, 2000) g;
		CREATE PUBLICATION ppl_pub FOR TABLE people;
		CREATE ROLE bridge LOGIN REPLICATION PASSWORD 'bridge-pw';
		GRANT SELECT ON people TO bridge;
		CREATE ROLE mallory LOGIN PASSWORD 'mallory-pw';
		CREATE SCHEMA m AUTHORIZATION mallory;`); err != nil {
		t.Fatal(err)
	}
	conn := pgConn(t, pg)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres"), "--grant-to", "bridge"); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	mallory, err := pgx.Connect(ctx, pg.URL("mallory", "mallory-pw", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer mallory.Close(ctx)
	var canSign, canRead bool
	if err := conn.QueryRow(ctx, `SELECT has_function_privilege('mallory', 'pg2iceberg.emit_signed(text)', 'execute'),
		has_table_privilege('mallory', 'pg2iceberg.secret', 'select')`).Scan(&canSign, &canRead); err != nil {
		t.Fatal(err)
	}
	if canSign || canRead {
		t.Fatalf("mallory may sign (%t) or read the key (%t)", canSign, canRead)
	}
	var relid uint32
	if err := conn.QueryRow(ctx, `SELECT 'people'::regclass::oid`).Scan(&relid); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	addr := freeAddr(t)
	run := append([]string{"run", "--source", pg.URL("bridge", "bridge-pw", "postgres"), "--publication", "ppl_pub", "--flush-interval", "1s", "--metrics-addr", addr}, tg.args()...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ppl_pub", b)
	if strings.Contains(b.log(), "DDL events are ignored") {
		t.Fatalf("the bridge cannot read the key:\n%s", tail(b.log(), 20))
	}
	before := schemas(t, tg, "public.people")
	// A spy slot keeps a genuine event's content for the replay below.
	exec1(t, conn, `SELECT pg_create_logical_replication_slot('spy', 'test_decoding')`)

	for _, f := range forgedDDL(relid) {
		emitDDL(t, mallory, f)
	}
	// A forged message inside a streamed transaction (larger than
	// logical_decoding_work_mem), in a subtransaction.
	exec1(t, mallory, `CREATE TABLE m.bulk (id int, pad text)`)
	tx, err := mallory.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`INSERT INTO m.bulk SELECT g, repeat('x', 100) FROM generate_series(1, 3000) g`, `SAVEPOINT s`} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_logical_emit_message(true, 'pg2iceberg.ddl', $1::text)`, forgedDDL(relid)[1]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// DDL of a role on its own table goes through the trigger as before.
	exec1(t, mallory, `ALTER TABLE m.bulk ADD COLUMN extra int`)
	exec1(t, conn, `UPDATE people SET name = 'after forgery' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	if got := schemas(t, tg, "public.people"); got != before {
		t.Errorf("schemas after forged events:\n%s\nwant\n%s", got, before)
	}
	want := func() []row { return pgRows(t, conn, "id::text AS id, name, age::text AS age", "people") }
	compareRows(t, "pyiceberg", "people after forged events", "id", pyicebergRows(t, tg, "public.people"), want())
	if n := metricValue(t, addr, "pg2iceberg_ddl_events_ignored_total"); n != 5 {
		t.Errorf("pg2iceberg_ddl_events_ignored_total = %d, want 5", n)
	}
	if n := strings.Count(b.log(), `msg="DDL event ignored"`); n != 5 {
		t.Errorf("%d warnings about ignored DDL events, want 5:\n%s", n, tail(b.log(), 20))
	}
	if strings.Contains(b.log(), strings.Repeat("9", 100)) {
		t.Errorf("the log repeats the forged content:\n%s", tail(b.log(), 20))
	}
	for _, l := range strings.Split(b.log(), "\n") {
		if strings.Contains(l, `msg="DDL event ignored"`) {
			t.Log(l)
		}
	}
	// The trigger signed mallory's DDL on her own table, CREATE and ALTER
	// (and the sink ignored them: not a published table).
	var signed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_logical_slot_peek_changes('spy', NULL, NULL)
		WHERE data LIKE 'message: transactional: 1 prefix: pg2iceberg.ddl, sz: % content:sig:%"bulk"%'`).Scan(&signed); err != nil {
		t.Fatal(err)
	}
	if signed != 2 {
		t.Errorf("%d signed events for mallory's CREATE TABLE and ALTER TABLE, want 2", signed)
	}

	// Genuine DDL applies exactly: a rename, then a rename in a
	// subtransaction of a streamed transaction.
	ids := map[string]int{}
	for _, f := range loadTable(t, tg, "public.people").Schema().Fields() {
		ids[f.Name] = f.ID
	}
	exec1(t, conn, `ALTER TABLE people RENAME COLUMN name TO full_name`)
	waitColumns(t, tg, "public.people", "id,full_name,age", time.Now(), time.Minute, "the rename")
	if err := pg.Exec(ctx, `BEGIN; UPDATE people SET age = age + 1; SAVEPOINT s; ALTER TABLE people RENAME COLUMN age TO years; RELEASE s;
		UPDATE people SET years = years + 1 WHERE id <= 1500; COMMIT;`); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	if !strings.Contains(b.log(), `msg="streamed transaction committed"`) {
		t.Errorf("the transaction with the second rename was not streamed:\n%s", tail(b.log(), 20))
	}
	for _, f := range loadTable(t, tg, "public.people").Schema().Fields() {
		if w := map[string]string{"full_name": "name", "years": "age"}[f.Name]; w != "" && f.ID != ids[w] {
			t.Errorf("%s has field id %d, want %d (%s's)", f.Name, f.ID, ids[w], w)
		}
	}
	want = func() []row { return pgRows(t, conn, "id::text AS id, full_name, years::text AS years", "people") }
	compareRows(t, "pyiceberg", "people after genuine renames", "id", pyicebergRows(t, tg, "public.people"), want())

	// A genuine event's content, signed for its own transaction, replayed
	// by mallory after the column is renamed back.
	var genuine string
	if err := conn.QueryRow(ctx, `SELECT substring(data FROM 'content:(.*)$') FROM pg_logical_slot_peek_changes('spy', NULL, NULL)
		WHERE data LIKE 'message: transactional: 1 prefix: pg2iceberg.ddl%' AND data LIKE '%full_name%' LIMIT 1`).Scan(&genuine); err != nil {
		t.Fatalf("genuine event in the spy slot: %v", err)
	}
	exec1(t, conn, `SELECT pg_drop_replication_slot('spy')`)
	exec1(t, conn, `ALTER TABLE people RENAME COLUMN full_name TO name`)
	emitDDL(t, mallory, genuine)
	exec1(t, conn, `UPDATE people SET name = 'after replay' WHERE id <= 5`)
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	if got := icegoColumns(t, tg, "public.people"); got != "id,name,years" {
		t.Errorf("columns %s after a replayed event, want id,name,years", got)
	}
	if n := metricValue(t, addr, "pg2iceberg_ddl_events_ignored_total"); n != 6 {
		t.Errorf("pg2iceberg_ddl_events_ignored_total = %d, want 6", n)
	}
	b.stop(t)

	// Forged messages the slot replays at every start do not stop it.
	before = schemas(t, tg, "public.people")
	for _, f := range forgedDDL(relid) {
		emitDDL(t, mallory, f)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ppl_pub", b)
	exec1(t, conn, `DELETE FROM people WHERE id > 1990`)
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	if n := metricValue(t, addr, "pg2iceberg_ddl_events_ignored_total"); n != 4 {
		t.Errorf("pg2iceberg_ddl_events_ignored_total = %d after the restart, want 4", n)
	}
	b.stop(t)
	if got := schemas(t, tg, "public.people"); got != before {
		t.Errorf("schemas after replayed forged events:\n%s\nwant\n%s", got, before)
	}
	want = func() []row { return pgRows(t, conn, "id::text AS id, name, years::text AS years", "people") }
	compareRows(t, "pyiceberg", "people after the restart", "id", pyicebergRows(t, tg, "public.people"), want())
}

// A DDL capture installed by an older pg2iceberg, whose events are not
// signed: the bridge says at start what to run and ignores its events;
// running setup again upgrades it in place, and a rename is exact again;
// --uninstall removes the key with the rest.
func TestDDLCaptureUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, err := os.ReadFile("testdata/ddl_capture_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n int);
		INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 20) g;
		CREATE PUBLICATION up_pub FOR TABLE t;`)
	if err := pg.Exec(ctx, string(old)); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	addr := freeAddr(t)
	run := runArgs(pg, "up_pub", tg, "--metrics-addr", addr)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_up_pub", b)
	if !strings.Contains(b.log(), "the DDL capture was installed by an older pg2iceberg") || !strings.Contains(b.log(), "pg2iceberg setup --source") {
		t.Errorf("no warning about the old capture at start:\n%s", tail(b.log(), 10))
	}
	// The old trigger's event is ignored; the relation message adds the column.
	exec1(t, conn, `ALTER TABLE t ADD COLUMN extra int`)
	exec1(t, conn, `UPDATE t SET extra = id WHERE id <= 3`)
	waitCaughtUp(t, conn, "pg2iceberg_up_pub", b)
	if n := metricValue(t, addr, "pg2iceberg_ddl_events_ignored_total"); n != 1 {
		t.Errorf("pg2iceberg_ddl_events_ignored_total = %d, want 1 (the old trigger's ADD COLUMN)", n)
	}
	b.stop(t)

	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup over the old capture: %v\n%s", err, out)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_up_pub", b)
	if strings.Contains(b.log(), "DDL events are ignored") {
		t.Errorf("the bridge cannot use the upgraded capture:\n%s", tail(b.log(), 10))
	}
	id := map[string]int{}
	for _, f := range loadTable(t, tg, "public.t").Schema().Fields() {
		id[f.Name] = f.ID
	}
	exec1(t, conn, `ALTER TABLE t RENAME COLUMN v TO w`)
	waitColumns(t, tg, "public.t", "id,w,n,extra", time.Now(), time.Minute, "the rename")
	exec1(t, conn, `UPDATE t SET w = 'renamed' WHERE id <= 2`)
	waitCaughtUp(t, conn, "pg2iceberg_up_pub", b)
	b.stop(t)
	for _, f := range loadTable(t, tg, "public.t").Schema().Fields() {
		if f.Name == "w" && f.ID != id["v"] {
			t.Errorf("w has field id %d, want %d (v's)", f.ID, id["v"])
		}
	}
	compareRows(t, "pyiceberg", "t after the upgrade", "id", pyicebergRows(t, tg, "public.t"),
		pgRows(t, conn, "id::text AS id, w, n::text AS n, extra::text AS extra", "t"))

	if out, err := runOnce(t, "setup", "--uninstall", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup --uninstall: %v\n%s", err, out)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pg2iceberg'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("schema pg2iceberg (with the key) still there after --uninstall: %d, %v", left, err)
	}
}
