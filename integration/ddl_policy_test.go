package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// A type change Iceberg cannot promote stops the bridge under the default
// policy, naming the table, the column and the option, with nothing
// written for it; restarted with type_change: new-column, the old field
// keeps its ID under a suffixed name, a new field takes the name, and the
// table is copied again so existing rows show their converted values. The
// changelog's structs follow, and it records the resync.
func TestTypeChangePolicy(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE SCHEMA pol;
		CREATE TABLE pol.items (id int PRIMARY KEY, code text, qty int);
		INSERT INTO pol.items SELECT g, (g * 7)::text, g FROM generate_series(1, 200) g;
		CREATE PUBLICATION pol_pub FOR TABLE pol.items;`)
	tg := localTarget(t)
	run := runArgs(pg, "pol_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_pol_pub", b)
	exec1(t, conn, `UPDATE pol.items SET qty = qty + 1 WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_pol_pub", b)
	ids := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, "pol.items") {
		ids[f.Name] = f.ID
	}

	exec1(t, conn, `ALTER TABLE pol.items ALTER COLUMN code TYPE int USING code::int`)
	exec1(t, conn, `UPDATE pol.items SET code = code + 1 WHERE id <= 5`)
	b.exited(t, time.Minute)
	for _, w := range []string{"pol.items", "column code", "type_change: new-column"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("incompatible type change error does not mention %q:\n%s", w, tail(b.log(), 5))
		}
	}
	if got := names(pyicebergSchema(t, tg, "pol.items")); got != "id,code,qty" {
		t.Errorf("after the rejected change: columns %s, want id,code,qty unchanged", got)
	}

	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: pol.items\n    type_change: new-column\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b = startBridge(t, nil, append(run, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_pol_pub", b)
	exec1(t, conn, `UPDATE pol.items SET qty = 0 WHERE id = 200`)
	waitCaughtUp(t, conn, "pg2iceberg_pol_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), "copying the table again") {
		t.Errorf("the retyped table was not copied again; log:\n%s", tail(b.log(), 10))
	}
	var got []string
	for _, f := range pyicebergSchema(t, tg, "pol.items") {
		got = append(got, f.Name+" "+f.Type)
		if f.Name == "code__v2" && f.ID != ids["code"] {
			t.Errorf("code__v2 has field id %d, want %d (the old code's)", f.ID, ids["code"])
		}
		if f.Name == "code" && f.ID == ids["code"] {
			t.Errorf("the new code field reuses the old field id %d", f.ID)
		}
	}
	if g := strings.Join(got, ", "); g != "id int, code__v2 string, qty int, code int" {
		t.Errorf("columns after new-column: %s, want id int, code__v2 string, qty int, code int", g)
	}
	checkRetypedMirror(t, tg, conn, "pol.items")
	var resyncs int
	for _, c := range pyicebergRows(t, tg, "pol.items__changelog") {
		if c["op"] == "R" {
			resyncs++
		}
		if a, ok := c["after"].(map[string]any); ok && c["op"] == "U" && a["id"] == "200" && (a["code"] != "1400" || a["code__v2"] != nil) {
			t.Errorf("changelog after image of id 200: %v, want code 1400 and no code__v2", a)
		}
	}
	if resyncs != 1 {
		t.Errorf("changelog has %d resync rows, want 1", resyncs)
	}
}

// checkRetypedMirror checks a mirror of (id, code, qty) after code was
// retyped under new-column and the table copied again: code__v2 is NULL in
// every row (no row at the source has the old type any more) and the rest
// equals Postgres.
func checkRetypedMirror(t *testing.T, tg target, conn *pgx.Conn, table string) {
	t.Helper()
	rows := pyicebergRows(t, tg, table)
	for _, r := range rows {
		if r["code__v2"] != nil {
			t.Fatalf("row %v: code__v2 holds a value; the copy replaced every row, and Postgres has no old-typed value left", r)
		}
		delete(r, "code__v2")
	}
	compareRows(t, "pyiceberg", table, "id", rows, pgRows(t, conn, "id::text AS id, qty::text AS qty, code::text AS code", table))
}

// With the DDL capture, ADD COLUMN is in the Iceberg schema within two
// flush intervals of its commit with no row change following, for a type
// that is not built in as well; a generated column and a column a
// publication column list leaves out are not added.
func TestAddColumnAtCommit(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TYPE mood AS ENUM ('sad', 'ok');
		CREATE TABLE people (id int PRIMARY KEY, name text);
		INSERT INTO people SELECT g, 'p' || g FROM generate_series(1, 50) g;
		CREATE TABLE listed (id int PRIMARY KEY, v text, hidden text);
		INSERT INTO listed SELECT g, 'v' || g, 'h' FROM generate_series(1, 5) g;
		CREATE PUBLICATION add_pub FOR TABLE people, listed (id, v);`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	const flush = 2 * time.Second
	b := startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "add_pub", "--flush-interval", flush.String()}, tg.args()...)...)
	waitSlot(t, conn, "pg2iceberg_add_pub", b)

	exec1(t, conn, `ALTER TABLE people ADD COLUMN nick text, ADD COLUMN m mood, ADD COLUMN twice int GENERATED ALWAYS AS (id * 2) STORED`)
	exec1(t, conn, `ALTER TABLE listed ADD COLUMN z int`)
	waitColumns(t, tg, "public.people", "id,name,nick,m", time.Now(), 2*flush, "ADD COLUMN")
	exec1(t, conn, `UPDATE people SET nick = 'n' || id, m = 'ok' WHERE id <= 3`)
	exec1(t, conn, `UPDATE listed SET v = 'w' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_add_pub", b)
	b.stop(t)
	if got := icegoColumns(t, tg, "public.listed"); got != "id,v" {
		t.Errorf("listed: columns %s, want id,v (the column list leaves z out)", got)
	}
	compareRows(t, "pyiceberg", "people", "id", pyicebergRows(t, tg, "public.people"), pgRows(t, conn, "id::text AS id, name, nick, m::text AS m", "people"))
}

// RENAME TABLE and SET SCHEMA rename the mirror and the changelog in the
// catalog, with their data, and a restart goes on under the new name.
func TestRenameTable(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 20) g;
		CREATE SCHEMA arch;
		CREATE PUBLICATION ren_pub FOR TABLE t;`)
	tg := localTarget(t)
	run := runArgs(pg, "ren_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ren_pub", b)
	exec1(t, conn, `ALTER TABLE t RENAME TO t2`)
	exec1(t, conn, `UPDATE t2 SET v = 'x' WHERE id = 1`)
	exec1(t, conn, `ALTER TABLE t2 SET SCHEMA arch`)
	exec1(t, conn, `UPDATE arch.t2 SET v = 'y' WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_ren_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), `msg="table renamed" from=public.t to=public.t2`) || !strings.Contains(b.log(), `msg="table renamed" from=public.t2 to=arch.t2`) {
		t.Errorf("renames not logged:\n%s", tail(b.log(), 10))
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ren_pub", b)
	exec1(t, conn, `DELETE FROM arch.t2 WHERE id = 3`)
	// A new table takes the old name: it must not share the renamed
	// table's directory, which still holds the renamed table's files.
	exec1(t, conn, `CREATE TABLE public.t (id int PRIMARY KEY, v text)`)
	exec1(t, conn, `INSERT INTO public.t SELECT g, 'new ' || g FROM generate_series(1, 5) g`)
	exec1(t, conn, `ALTER PUBLICATION ren_pub ADD TABLE public.t`)
	exec1(t, conn, `INSERT INTO public.t VALUES (6, 'new 6')`)
	waitCaughtUp(t, conn, "pg2iceberg_ren_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", "public.t (new)", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "public.t"))
	compareRows(t, "pyiceberg", "arch.t2", "id", pyicebergRows(t, tg, "arch.t2"), pgRows(t, conn, "id::text AS id, v", "arch.t2"))
	ops := map[string]int{}
	for _, c := range pyicebergRows(t, tg, "arch.t2__changelog") {
		ops[c["op"].(string)]++
	}
	if ops["U"] != 2 || ops["D"] != 1 {
		t.Errorf("arch.t2__changelog ops %v, want the 2 updates and the delete", ops)
	}
	cat, err := iceberg.OpenCatalog(context.Background(), iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range []table.Identifier{{"public", "t2"}, {"public", "t2__changelog"}} {
		if _, err := cat.LoadTable(context.Background(), old); !errors.Is(err, catalog.ErrNoSuchTable) {
			t.Errorf("%v after the renames: %v, want no such table", old, err)
		}
	}
	for _, pair := range [][2]table.Identifier{{{"arch", "t2"}, {"public", "t"}}, {{"arch", "t2__changelog"}, {"public", "t__changelog"}}} {
		renamed, err := cat.LoadTable(context.Background(), pair[0])
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := cat.LoadTable(context.Background(), pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if renamed.Location() == fresh.Location() || strings.HasPrefix(fresh.Location(), renamed.Location()+"/") {
			t.Errorf("%v (new) is in %s, the directory of %v", pair[1], fresh.Location(), pair[0])
		} else {
			t.Logf("%v keeps %s; the new %v is in %s", pair[0], renamed.Location(), pair[1], fresh.Location())
		}
	}
	compareRows(t, "pyiceberg", "arch.t2 (after the new public.t)", "id", pyicebergRows(t, tg, "arch.t2"), pgRows(t, conn, "id::text AS id, v", "arch.t2"))
}

// With the DDL capture, DROP TABLE follows each table's drop_table policy:
// keep (the default) leaves the Iceberg tables with every change before the
// drop and marks them in their properties; drop removes them. The bridge
// goes on with the other tables, also after a restart.
func TestDropTablePolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (id int PRIMARY KEY, v text);
		CREATE TABLE c (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 10) g;
		INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 10) g;
		INSERT INTO c SELECT g, 'c' || g FROM generate_series(1, 10) g;
		CREATE PUBLICATION drop_pub FOR TABLE a, b, c;`)
	cfg := setupDropB(t, pg)
	tg := localTarget(t)
	run := runArgs(pg, "drop_pub", tg, "--config", cfg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_drop_pub", b)
	if err := pg.Exec(ctx, `BEGIN; DELETE FROM a WHERE id = 1; UPDATE a SET v = 'last' WHERE id = 2; DROP TABLE a; COMMIT;`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `DROP TABLE b`)
	exec1(t, conn, `UPDATE c SET v = 'x' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_drop_pub", b)
	b.stop(t)

	rows := pyicebergRows(t, tg, "public.a")
	want := []row{}
	for i := 2; i <= 10; i++ {
		v := "a" + strconv.Itoa(i)
		if i == 2 {
			v = "last"
		}
		want = append(want, row{"id": strconv.Itoa(i), "v": v})
	}
	compareRows(t, "pyiceberg", "a (kept after DROP TABLE)", "id", rows, want)
	for _, name := range []string{"public.a", "public.a__changelog"} {
		if p := loadTable(t, tg, name).Properties()[iceberg.PropDropped]; !strings.Contains(p, `"lsn"`) {
			t.Errorf("%s: property %s = %q, want the drop's LSN and time", name, iceberg.PropDropped, p)
		}
	}
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []table.Identifier{{"public", "b"}, {"public", "b__changelog"}} {
		if _, err := cat.LoadTable(ctx, gone); !errors.Is(err, catalog.ErrNoSuchTable) {
			t.Errorf("%v with drop_table: drop: %v, want no such table", gone, err)
		}
	}
	// The entry for b outlives its table: a warning at the restart, no stop.
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_drop_pub", b)
	exec1(t, conn, `UPDATE c SET v = 'y' WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_drop_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), "tables entry 1: table public.b is not in publication drop_pub") || !strings.Contains(b.log(), "level=WARN") {
		t.Errorf("no warning for the entry of the dropped table:\n%s", tail(b.log(), 10))
	}
	compareRows(t, "pyiceberg", "c", "id", pyicebergRows(t, tg, "public.c"), pgRows(t, conn, "id::text AS id, v", "c"))
}

// A primary key change re-keys the mirror: with the DDL capture at the
// transaction's commit, and at start for a change made while the bridge
// was stopped. Deletes, which carry only the key, then find their rows.
func TestKeyChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE k (a int NOT NULL, b int NOT NULL, v text, PRIMARY KEY (a));
		INSERT INTO k SELECT g, g * 10, 'v' || g FROM generate_series(1, 100) g;
		CREATE PUBLICATION key_pub FOR TABLE k;`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	run := runArgs(pg, "key_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_key_pub", b)
	if err := pg.Exec(ctx, `BEGIN; ALTER TABLE k DROP CONSTRAINT k_pkey; ALTER TABLE k ADD PRIMARY KEY (b); COMMIT;`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `UPDATE k SET a = a + 1000 WHERE b <= 50`)
	exec1(t, conn, `DELETE FROM k WHERE b IN (100, 200)`)
	waitCaughtUp(t, conn, "pg2iceberg_key_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), `msg="key changed: key index rebuilt" table=public.k from=a to=b`) {
		t.Errorf("key change not logged:\n%s", tail(b.log(), 10))
	}
	identifiers := func() string {
		tbl := loadTable(t, tg, "public.k")
		var n []string
		for _, id := range tbl.Schema().IdentifierFieldIDs {
			f, _ := tbl.Schema().FindFieldByID(id)
			n = append(n, f.Name)
		}
		return strings.Join(n, ",")
	}
	if got := identifiers(); got != "b" {
		t.Errorf("identifier fields %s, want b", got)
	}
	want := "a::text AS a, b::text AS b, v"
	compareRows(t, "pyiceberg", "k keyed by b", "b", pyicebergRows(t, tg, "public.k"), pgRows(t, conn, want, "k"))

	// While the bridge is stopped: back to a.
	if err := pg.Exec(ctx, `BEGIN; ALTER TABLE k DROP CONSTRAINT k_pkey; ALTER TABLE k ADD PRIMARY KEY (a); COMMIT;`); err != nil {
		t.Fatal(err)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_key_pub", b)
	exec1(t, conn, `DELETE FROM k WHERE a IN (1003, 5)`)
	exec1(t, conn, `UPDATE k SET b = b + 1 WHERE a > 90`)
	waitCaughtUp(t, conn, "pg2iceberg_key_pub", b)
	b.stop(t)
	if got := identifiers(); got != "a" {
		t.Errorf("identifier fields %s after the restart, want a", got)
	}
	compareRows(t, "pyiceberg", "k keyed by a again", "a", pyicebergRows(t, tg, "public.k"), pgRows(t, conn, want, "k"))
}

// Renames under a concurrent write load, with the DDL capture: rename,
// rename again, and add a column back under the first old name; after each
// step pyiceberg and Spark SQL read the mirror (and Spark the changelog)
// with Postgres's columns and values, and the renamed field keeps its ID.
func TestRenamesUnderLoad(t *testing.T) {
	t.Parallel()
	jar := sparkJar(t)
	pg, conn := startSource(t, `CREATE TABLE r (id int PRIMARY KEY, a text, n int);
		INSERT INTO r SELECT g, 'a' || g, 0 FROM generate_series(1, 200) g;
		CREATE PUBLICATION r_pub FOR TABLE r;`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "r_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_r_pub", b)
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, jar)
	ids := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, "public.r") {
		ids[f.Name] = f.ID
	}
	var loadMu sync.Mutex
	stop := writeLoad(t, pg, 3*time.Millisecond, func(ctx context.Context, lc *pgx.Conn, i int) error {
		loadMu.Lock()
		defer loadMu.Unlock()
		_, err := lc.Exec(ctx, `UPDATE r SET n = n + 1 WHERE id = $1 % 200 + 1`, i)
		return err
	})
	defer stop()
	check := func(step, cols, wantNames, renamed string) {
		t.Helper()
		time.Sleep(time.Second) // the load runs under the new schema
		loadMu.Lock()
		defer loadMu.Unlock()
		since := walLSN(t, conn)
		exec1(t, conn, `UPDATE r SET n = n + 1 WHERE id <= 3`)
		waitCaughtUp(t, conn, "pg2iceberg_r_pub", b)
		schema := pyicebergSchema(t, tg, "public.r")
		if got := names(schema); got != wantNames {
			t.Fatalf("%s: columns %s, want %s", step, got, wantNames)
		}
		for _, f := range schema {
			if f.Name == renamed && f.ID != ids["a"] {
				t.Errorf("%s: %s has field id %d, want %d (a's)", step, renamed, f.ID, ids["a"])
			}
		}
		want := pgRows(t, conn, cols, "r")
		compareRows(t, "pyiceberg after "+step, "r", "id", pyicebergRows(t, tg, "public.r"), want)
		sparkChecksTable(t, spark, tg, conn, "r", "public.r", "id", want, since, step)
	}
	exec1(t, conn, `ALTER TABLE r RENAME COLUMN a TO b`)
	check("rename a to b", `id::text AS id, b, n::text AS n`, "id,b,n", "b")
	exec1(t, conn, `ALTER TABLE r RENAME COLUMN b TO c`)
	check("rename b to c", `id::text AS id, c, n::text AS n`, "id,c,n", "c")
	exec1(t, conn, `ALTER TABLE r ADD COLUMN a text`)
	exec1(t, conn, `UPDATE r SET a = 'new ' || id WHERE id <= 20`)
	check("add a back", `id::text AS id, c, n::text AS n, a`, "id,c,n,a", "c")
	stop()
	b.stop(t)
}

// The re-copy that ADD COLUMN ... DEFAULT starts is recorded
// (pg2iceberg.recopy) before it runs: killed during it, the bridge copies
// the table again at the next start, and existing rows show the default.
func TestRecopyAfterKill(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
		CREATE PUBLICATION rc_pub FOR TABLE t;`)
	tg := localTarget(t)
	run := runArgs(pg, "rc_pub", tg)
	// The first FinishCopy is the initial copy's, the second the re-copy's.
	b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=copy-finish:2"}, run...)
	waitSlot(t, conn, "pg2iceberg_rc_pub", b)
	exec1(t, conn, `ALTER TABLE t ADD COLUMN d text NOT NULL DEFAULT 'dflt'`)
	exec1(t, conn, `UPDATE t SET v = 'x' WHERE id = 1`)
	b.crashed(t, time.Minute)
	if p := loadTable(t, tg, "public.t").Properties()[iceberg.PropRecopy]; p == "" {
		t.Fatalf("killed during the re-copy, but %s is not set; log:\n%s", iceberg.PropRecopy, tail(b.log(), 10))
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rc_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), "an interrupted re-copy runs again") {
		t.Errorf("the restart did not copy the table again; log:\n%s", tail(b.log(), 10))
	}
	if p, ok := loadTable(t, tg, "public.t").Properties()[iceberg.PropRecopy]; ok {
		t.Errorf("%s still set (%q) after the re-copy", iceberg.PropRecopy, p)
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v, d", "t"))
}

// A table without a key has a changelog only. When it gets a primary key
// while the bridge runs (DDL capture), the mirror is made and the table
// copied after that transaction commits; changes after the copy reach it,
// the changelog misses none, and a restart keeps it.
func TestKeyGained(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE nk (a int NOT NULL, v text);
		INSERT INTO nk SELECT g, 'v' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION nk_pub FOR TABLE nk;`)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	run := runArgs(pg, "nk_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_nk_pub", b)
	exec1(t, conn, `INSERT INTO nk VALUES (51, 'before the key')`)
	exec1(t, conn, `ALTER TABLE nk ADD PRIMARY KEY (a)`)
	exec1(t, conn, `INSERT INTO nk VALUES (52, 'after the key')`)
	exec1(t, conn, `UPDATE nk SET v = 'updated' WHERE a = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_nk_pub", b)
	exec1(t, conn, `UPDATE nk SET v = 'after the copy' WHERE a = 3`)
	waitCaughtUp(t, conn, "pg2iceberg_nk_pub", b)
	b.stop(t)
	for _, w := range []string{`msg="table has a key now`, `msg="mirror created" table=public.nk`, `msg="table sync finished" table=public.nk`} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("log lacks %s; log:\n%s", w, tail(b.log(), 15))
		}
	}
	compareRows(t, "pyiceberg", "public.nk (mirror made while streaming)", "a", pyicebergRows(t, tg, "public.nk"), pgRows(t, conn, "a, v", "public.nk"))
	// The changelog kept every change, before and after the key.
	if got := changelogOps(t, tg, "public.nk__changelog"); got != "I,I,R,U,U" {
		t.Errorf("changelog ops %s, want I,I,R,U,U (two inserts, the resync, two updates)", got)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_nk_pub", b)
	exec1(t, conn, `DELETE FROM nk WHERE a = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_nk_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", "public.nk (after a restart)", "a", pyicebergRows(t, tg, "public.nk"), pgRows(t, conn, "a, v", "public.nk"))
}

// changelogOps is a changelog's op column, sorted and joined by commas.
func changelogOps(t *testing.T, tg target, table string) string {
	t.Helper()
	var ops []string
	for _, c := range pyicebergRows(t, tg, table) {
		ops = append(ops, fmt.Sprint(c["op"]))
	}
	slices.Sort(ops)
	return strings.Join(ops, ",")
}

// A table without a key that gets one while the bridge is stopped has its
// mirror made and copied at the next start; its changelog, which has
// history, still records the changes made while the bridge was stopped.
func TestKeyGainedWhileStopped(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE nk (a int NOT NULL, v text);
		INSERT INTO nk SELECT g, 'v' || g FROM generate_series(1, 20) g;
		CREATE PUBLICATION nk_pub FOR TABLE nk;`)
	tg := localTarget(t)
	run := runArgs(pg, "nk_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_nk_pub", b)
	exec1(t, conn, `INSERT INTO nk VALUES (21, 'while keyless')`)
	waitCaughtUp(t, conn, "pg2iceberg_nk_pub", b)
	b.stop(t)
	exec1(t, conn, `ALTER TABLE nk ADD PRIMARY KEY (a)`)
	exec1(t, conn, `INSERT INTO nk VALUES (22, 'while stopped')`)
	exec1(t, conn, `UPDATE nk SET v = 'changed while stopped' WHERE a = 1`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_nk_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_nk_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", "public.nk (mirror made at the start)", "a", pyicebergRows(t, tg, "public.nk"), pgRows(t, conn, "a, v", "public.nk"))
	if got := changelogOps(t, tg, "public.nk__changelog"); got != "I,I,R,U" {
		t.Errorf("changelog ops %s, want I,I,R,U (the insert while keyless, the two changes while stopped, the copy)", got)
	}
}

// Killed right after a retype's schema commit under new-column, with a
// transaction from before the retype applied but not flushed: the restart
// replays that transaction onto the retyped schema (its old-typed values go
// to the retired field, code__v2, in the changelog) and copies the table
// again (the schema's commit marks it, pg2iceberg.recopy), so the mirror
// ends equal to Postgres and the changelog holds each change once. Point 1
// kills after the mirror's schema commit, point 2 after the changelog's.
func TestTypeChangeCrash(t *testing.T) {
	t.Parallel()
	for _, crash := range []string{"after-schema:1", "after-schema:2"} {
		t.Run(crash, func(t *testing.T) {
			pg, conn := startSource(t, `CREATE SCHEMA tc;
				CREATE TABLE tc.items (id int PRIMARY KEY, code text, qty int);
				INSERT INTO tc.items SELECT g, (g * 7)::text, g FROM generate_series(1, 200) g;
				CREATE PUBLICATION tc_pub FOR TABLE tc.items;`)
			tg := localTarget(t)
			cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
			if err := os.WriteFile(cfg, []byte("tables:\n  - table: tc.items\n    type_change: new-column\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// A flush interval longer than the test: the update before the
			// retype is applied but not committed when the bridge dies.
			run := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "tc_pub", "--flush-interval", "10m", "--config", cfg}, tg.args()...)
			b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=" + crash}, run...)
			waitSlot(t, conn, "pg2iceberg_tc_pub", b)
			exec1(t, conn, `UPDATE tc.items SET code = code || '1' WHERE id <= 3`)
			exec1(t, conn, `ALTER TABLE tc.items ALTER COLUMN code TYPE int USING code::int`)
			exec1(t, conn, `UPDATE tc.items SET code = code + 1 WHERE id = 10`)
			b.crashed(t, time.Minute)
			if p := loadTable(t, tg, "tc.items").Properties()[iceberg.PropRecopy]; p == "" {
				t.Fatalf("killed after the retype's schema commit, but %s is not set; log:\n%s", iceberg.PropRecopy, tail(b.log(), 10))
			}

			b = startBridge(t, nil, append(run[:len(run):len(run)], "--flush-interval", "1s")...)
			waitSlot(t, conn, "pg2iceberg_tc_pub", b)
			waitCaughtUp(t, conn, "pg2iceberg_tc_pub", b)
			b.stop(t)
			if !strings.Contains(b.log(), "an interrupted re-copy runs again") {
				t.Errorf("the restart did not copy the table again; log:\n%s", tail(b.log(), 10))
			}
			checkRetypedMirror(t, tg, conn, "tc.items")
			before := map[string]int{}
			var after10 []string
			for _, c := range pyicebergRows(t, tg, "tc.items__changelog") {
				a, _ := c["after"].(map[string]any)
				if c["op"] != "U" || a == nil {
					continue
				}
				switch id := fmt.Sprint(a["id"]); id {
				case "1", "2", "3":
					// Written before the retype: the old text value, kept
					// in the retired field.
					want := fmt.Sprintf("%d1", 7*map[string]int{"1": 1, "2": 2, "3": 3}[id])
					if fmt.Sprint(a["code__v2"]) != want || a["code"] != nil {
						t.Errorf("changelog after image of id %s: %v, want code__v2 %s and no code", id, a, want)
					}
					before[id]++
				case "10":
					after10 = append(after10, fmt.Sprint(a["code"]))
				}
			}
			if len(before) != 3 || before["1"] != 1 || before["2"] != 1 || before["3"] != 1 {
				t.Errorf("changelog updates before the retype, by id: %v; want each of 1, 2, 3 once", before)
			}
			if len(after10) != 1 || after10[0] != "71" {
				t.Errorf("changelog updates of id 10 after the retype: %v, want [71]", after10)
			}
		})
	}
}
