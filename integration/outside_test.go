package integration

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startSparkJDBC is startSpark for a session whose catalog name is
// Iceberg's JdbcCatalog on the Postgres database of pg, the bridge's SQL
// catalog (--catalog postgres://...), its warehouse at wh.
func startSparkJDBC(t *testing.T, name string, pg pgDB, wh string) *sparkSession {
	t.Helper()
	jar := sparkJar(t)
	if !fileExists(filepath.Join(filepath.Dir(jar), "postgresql-jdbc.jar")) {
		t.Fatalf("no postgresql-jdbc.jar next to %s: run scripts/setup.sh", jar)
	}
	s := startSpark(t, "", "", jar)
	s.open = map[string]string{
		"jdbc_name": name, "jdbc_uri": fmt.Sprintf("jdbc:postgresql://%s:%d/%s", pg.host, pg.port, pg.db),
		"jdbc_user": pg.user, "password": pg.password, "jdbc_warehouse": "file://" + mustAbs(t, wh),
	}
	return s
}

// pgDB is a database of a harness Postgres.
type pgDB struct {
	host           string
	port           int
	db             string
	user, password string
}

// registerInSQLite registers the table name of tg (any catalog) in a new
// SQLite catalog and returns a target on it: pyiceberg reads it there
// (this machine's Python has no Postgres driver).
func registerInSQLite(t *testing.T, tg target, name string) target {
	t.Helper()
	ctx := context.Background()
	tbl := icegoTable(t, tg, name)
	lite := target{name: "sqlite", warehouse: tg.warehouse, catalog: filepath.Join(t.TempDir(), "catalog.db")}
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: lite.warehouse, Catalog: lite.catalog})
	if err != nil {
		t.Fatal(err)
	}
	if err := iceberg.CloseCatalog(cat); err != nil { // it made the catalog's tables
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", lite.catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ident := tbl.Identifier()
	if _, err := db.ExecContext(ctx, `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, iceberg_type) VALUES ('pg2iceberg', ?, ?, ?, 'TABLE')`,
		strings.Join(ident[:len(ident)-1], "."), ident[len(ident)-1], tbl.MetadataLocation()); err != nil {
		t.Fatal(err)
	}
	return lite
}

// outsideStep is one random insert, update or delete on items.
func outsideStep(ctx context.Context, c *pgx.Conn, rng *rand.Rand, next *int) error {
	var err error
	switch k := rng.Intn(10); {
	case k < 2:
		*next++
		_, err = c.Exec(ctx, `INSERT INTO items VALUES ($1, 'new', 0)`, *next)
	case k < 3:
		_, err = c.Exec(ctx, `DELETE FROM items WHERE id = $1`, 1+rng.Intn(*next))
	default:
		_, err = c.Exec(ctx, `UPDATE items SET n = n + 1, v = md5(random()::text) WHERE id IN ($1, $2, $3)`, 1+rng.Intn(*next), 1+rng.Intn(*next), 1+rng.Intn(*next))
	}
	return err
}

// Spark's maintenance on a mirror, through Iceberg's JdbcCatalog on the
// bridge's Postgres SQL catalog, while the bridge streams: after
// rewrite_data_files (rows move to Spark's files) the bridge drops the
// batch whose deletes point at the old files, rebuilds its key index and
// replays; after rewrite_position_delete_files (rows stay) it commits on
// top; after expire_snapshots there is nothing to reconcile. It never
// exits, and the mirror equals Postgres for every reader.
func TestOutsideSparkMaintenance(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE items (id int PRIMARY KEY, v text, n int);
		INSERT INTO items SELECT g, 'v' || g, 0 FROM generate_series(1, 300) g;
		CREATE PUBLICATION out_pub FOR TABLE items;`)
	if err := pg.Exec(context.Background(), `CREATE DATABASE lake`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tg := target{name: "postgres catalog", warehouse: filepath.Join(dir, "wh"), catalog: pg.SuperURL("lake")}
	spark := startSparkJDBC(t, "pg2iceberg", pgDB{pg.Host, pg.Port, "lake", pg.SuperUser, pg.SuperPassword}, tg.warehouse)
	addr := freeAddr(t)
	// The bridge's own compaction off: the test needs the small files
	// Spark's rewrite_data_files is to merge.
	b := startBridge(t, nil, runArgs(pg, "out_pub", tg, "--metrics-addr", addr, "--config", noCompaction(t, "public.items"))...)
	const slot = "pg2iceberg_out_pub"
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)

	rng, next := rand.New(rand.NewSource(17)), 300
	burst := func(n int) {
		t.Helper()
		ctx := context.Background()
		for range n {
			if err := outsideStep(ctx, conn, rng, &next); err != nil {
				t.Fatal(err)
			}
		}
		waitCaughtUp(t, conn, slot, b)
	}
	// Several flushes: several data and delete files to rewrite.
	for range 4 {
		burst(30)
	}
	before := liveCounts(t, tg, "public.items")
	if before.data < 3 || before.deletes < 3 {
		t.Fatalf("before the rewrite: %+v, want at least 3 data and 3 delete files", before)
	}

	began := time.Now()
	var rewritten []row
	if !spark.do(t, map[string]string{"op": "sql", "sql": `CALL pg2iceberg.system.rewrite_data_files(table => 'public.items', options => map('min-input-files','2'))`}, &rewritten) {
		t.FailNow()
	}
	after := sparkReplace(t, tg, "public.items", "rewrite_data_files")
	t.Logf("rewrite_data_files: %+v -> %+v in %v (Spark's session up after %v)", before, after, time.Since(began).Round(time.Second), spark.upAfter.Round(time.Second))
	if after.data >= before.data {
		t.Fatalf("rewrite_data_files left %d data files (had %d): %v", after.data, before.data, rewritten)
	}
	burst(60) // deletes of rows that now live in Spark's files
	if !strings.Contains(b.log(), "rebuild_key_index=true") || !strings.Contains(b.log(), `msg="resuming the stream after an outside commit"`) {
		t.Fatalf("no rebuild after rewrite_data_files:\n%s", tail(b.log(), 30))
	}
	compareMirror(t, conn, tg, spark, "after rewrite_data_files")

	var rewrittenDeletes []row
	if !spark.do(t, map[string]string{"op": "sql", "sql": `CALL pg2iceberg.system.rewrite_position_delete_files(table => 'public.items', options => map('rewrite-all','true'))`}, &rewrittenDeletes) {
		t.FailNow()
	}
	sparkReplace(t, tg, "public.items", "rewrite_position_delete_files")
	rebuilds := strings.Count(b.log(), "rebuild_key_index=true")
	burst(60)
	if n := strings.Count(b.log(), "rebuild_key_index=false"); n != 1 {
		t.Errorf("%d outside commits kept the key index after rewrite_position_delete_files, want 1:\n%s", n, tail(b.log(), 30))
	}
	if n := strings.Count(b.log(), "rebuild_key_index=true"); n != rebuilds {
		t.Errorf("rewrite_position_delete_files made the bridge rebuild its key index")
	}

	var expired []row
	now := time.Now().UTC().Add(time.Second).Format("2006-01-02 15:04:05.000") // the session's zone is UTC
	if !spark.do(t, map[string]string{"op": "sql", "sql": `CALL pg2iceberg.system.expire_snapshots(table => 'public.items', older_than => TIMESTAMP '` + now + `', retain_last => 1)`}, &expired) {
		t.FailNow()
	}
	if n := len(icegoTable(t, tg, "public.items").Metadata().Snapshots()); n != 1 {
		t.Fatalf("expire_snapshots left %d snapshots, want 1: %v", n, expired)
	}
	burst(60)
	if !b.running() {
		t.Fatalf("bridge exited: %v", b.err)
	}
	compareMirror(t, conn, tg, spark, "at the end")
	// rewrite_data_files and rewrite_position_delete_files committed one
	// snapshot each; expire_snapshots none.
	if n := metricValue(t, addr, `pg2iceberg_outside_commits_total{table="public.items"}`); n != 2 {
		t.Errorf("pg2iceberg_outside_commits_total{table=public.items} = %d, want 2", n)
	}
	live := liveCounts(t, tg, "public.items")
	if n := metricValue(t, addr, `pg2iceberg_table_live_files{content="data",table="public.items"}`); n != int64(live.data) {
		t.Errorf("pg2iceberg_table_live_files{public.items, data} = %d, want %d", n, live.data)
	}
	if n := metricValue(t, addr, `pg2iceberg_table_live_files{content="deletes",table="public.items"}`); n != int64(live.deletes) {
		t.Errorf("pg2iceberg_table_live_files{public.items, deletes} = %d, want %d", n, live.deletes)
	}
	status, err := runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "out_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, status)
	}
	if want := fmt.Sprintf("(?m)^public\\.items +watermark .*\n    live files: %d data, %d deletes, [1-9][0-9]* bytes(, last compaction \\S+)?$", live.data, live.deletes); !regexp.MustCompile(want).MatchString(status) {
		t.Errorf("status does not show the mirror's live files (%+v):\n%s", live, status)
	}
	var dups []row
	if spark.do(t, map[string]string{"op": "sql", "sql": `SELECT lsn, xid, seq FROM pg2iceberg.public.items__changelog GROUP BY lsn, xid, seq HAVING count(*) > 1`}, &dups) && len(dups) > 0 {
		t.Errorf("changelog has %d duplicate (lsn, xid, seq): %v", len(dups), dups[:min(5, len(dups))])
	}
	b.stop(t)
}

// compareMirror compares the mirror of items with Postgres, read by
// iceberg-go, pyiceberg and Spark.
func compareMirror(t *testing.T, conn *pgx.Conn, tg target, spark *sparkSession, when string) {
	t.Helper()
	want := pgRows(t, conn, "id::text AS id, v, n::text AS n", "items")
	compareRows(t, "iceberg-go "+when, "items", "id", icegoRows(t, tg, "public.items"), want)
	compareRows(t, "pyiceberg "+when, "items", "id", pyicebergRows(t, registerInSQLite(t, tg, "public.items"), "public.items"), want)
	var got []row
	if spark.do(t, map[string]string{"op": "sql", "sql": `SELECT CAST(id AS string) AS id, v, CAST(n AS string) AS n FROM pg2iceberg.public.items`}, &got) {
		compareRows(t, "spark "+when, "items", "id", got, want)
	}
}

// fileCounts are a snapshot's live data and delete files.
type fileCounts struct{ data, deletes int }

func liveCounts(t *testing.T, tg target, name string) fileCounts {
	t.Helper()
	s := icegoTable(t, tg, name).CurrentSnapshot()
	if s == nil || s.Summary == nil {
		t.Fatalf("%s has no snapshot", name)
	}
	l := iceberg.LiveFilesOf(s)
	return fileCounts{int(l.Data), int(l.Deletes)}
}

// sparkReplace requires the table's current snapshot to be a "replace"
// that Spark committed (its summary names Spark as the engine, not the
// bridge's source), and returns its file counts.
func sparkReplace(t *testing.T, tg target, name, what string) fileCounts {
	t.Helper()
	s := icegoTable(t, tg, name).CurrentSnapshot()
	if s.Summary == nil || s.Summary.Operation != table.OpReplace || s.Summary.Properties["engine-name"] != "spark" || s.Summary.Properties[iceberg.PropSource] != "" {
		t.Fatalf("after %s the current snapshot is not Spark's replace: %+v", what, s.Summary)
	}
	return liveCounts(t, tg, name)
}

// outsideEqualityDelete commits, as another writer would (Flink, say), an
// equality delete of the rows with the given ids on the mirror name.
func outsideEqualityDelete(t *testing.T, tg target, name string, ids ...int32) {
	t.Helper()
	ctx := context.Background()
	tbl := loadTable(t, tg, name)
	field, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		t.Fatalf("%s has no column id", name)
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil), []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	txn := tbl.NewTransaction()
	files, err := txn.WriteEqualityDeletes(ctx, []int{field.ID}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// An outside commit of equality deletes on a mirror (which the key index
// cannot be built from) does not stop the bridge: the mirror is copied
// again, which replaces every file and makes it equal Postgres, and the
// other tables stream on.
func TestOutsideEqualityDeletes(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE items (id int PRIMARY KEY, v text);
		INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 100) g;
		CREATE TABLE other (id int PRIMARY KEY, v text);
		CREATE PUBLICATION eq_pub FOR TABLE items, other;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "eq_pub", tg)...)
	const slot = "pg2iceberg_eq_pub"
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `UPDATE items SET v = 'a' WHERE id <= 50`)
	waitCaughtUp(t, conn, slot, b)

	outsideEqualityDelete(t, tg, "public.items", 1, 2, 3)
	if n := len(icegoRows(t, tg, "public.items")); n != 97 {
		t.Fatalf("after the outside equality delete the mirror has %d rows, want 97", n)
	}
	exec1(t, conn, `UPDATE items SET v = 'b' WHERE id BETWEEN 40 AND 60`)
	exec1(t, conn, `INSERT INTO other SELECT g, 'o' FROM generate_series(1, 10) g`)
	waitCaughtUp(t, conn, slot, b)
	exec1(t, conn, `UPDATE items SET v = 'c' WHERE id > 90`)
	exec1(t, conn, `UPDATE other SET v = 'p' WHERE id > 5`)
	waitCaughtUp(t, conn, slot, b)
	for _, w := range []string{`msg="a mirror has deletes the bridge cannot read: copying the table again" table=public.items`, "rebuild_key_index=true"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("bridge log lacks %q:\n%s", w, tail(b.log(), 30))
		}
	}
	if !b.running() {
		t.Fatalf("bridge exited: %v", b.err)
	}
	compareRows(t, "iceberg-go", "items", "id", icegoRows(t, tg, "public.items"), pgRows(t, conn, "id::text AS id, v", "items"))
	compareRows(t, "iceberg-go", "other", "id", icegoRows(t, tg, "public.other"), pgRows(t, conn, "id::text AS id, v", "other"))
	compareRows(t, "pyiceberg", "items", "id", pyicebergRows(t, tg, "public.items"), pgRows(t, conn, "id::text AS id, v", "items"))
	if s := icegoTable(t, tg, "public.items").CurrentSnapshot(); s.Summary.Properties["total-equality-deletes"] != "0" {
		t.Errorf("the copy left equality deletes: %v", s.Summary.Properties)
	}
	b.stop(t)

	// The same while the bridge is stopped: the start copies the table.
	outsideEqualityDelete(t, tg, "public.items", 4, 5)
	b = startBridge(t, nil, runArgs(pg, "eq_pub", tg)...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `UPDATE items SET v = 'd' WHERE id < 10`)
	waitCaughtUp(t, conn, slot, b)
	if !strings.Contains(b.log(), `msg="an interrupted re-copy runs again" table=public.items`) {
		t.Errorf("the start did not copy public.items again:\n%s", tail(b.log(), 30))
	}
	compareRows(t, "iceberg-go after a restart", "items", "id", icegoRows(t, tg, "public.items"), pgRows(t, conn, "id::text AS id, v", "items"))
	b.stop(t)
}
