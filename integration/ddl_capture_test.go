package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// loadTable loads a table with iceberg-go from tg's catalog.
//
// The catalog stays open: tests commit through the table it returns (a
// table from icegoTable, whose catalog is closed, cannot commit).
func loadTable(t *testing.T, tg target, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	ns, tb, _ := strings.Cut(name, ".")
	tbl, err := cat.LoadTable(ctx, table.Identifier{ns, tb})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// waitColumns waits until iceberg-go reads the table's columns as want,
// failing the test when that takes longer than within after committed.
func waitColumns(t *testing.T, tg target, table, want string, committed time.Time, within time.Duration, what string) {
	t.Helper()
	for {
		got := icegoColumns(t, tg, table)
		if got == want {
			t.Logf("%s visible %v after commit", what, time.Since(committed).Round(10*time.Millisecond))
			return
		}
		if time.Since(committed) > within {
			t.Fatalf("columns %s %v after %s, want %s within %v", got, time.Since(committed), what, want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// icegoColumns reads a table's current column names with iceberg-go.
func icegoColumns(t *testing.T, tg target, name string) string {
	t.Helper()
	var n []string
	for _, f := range loadTable(t, tg, name).Schema().Fields() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

// With the DDL capture installed (pg2iceberg setup): a rename keeps the
// field ID and the values; a schema change with no following row change is
// in the Iceberg schema within two flush intervals of its commit; renaming
// back and forth works; pyiceberg, iceberg-go and Spark SQL read the
// renamed columns and the changelog's images; time travel (iceberg-go and
// Spark) to before a rename reads the old schema and values; uninstall
// removes the capture.
func TestDDLCapture(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	jar := sparkJar(t)
	pg, conn := startSource(t, `CREATE TABLE people (id int PRIMARY KEY, name text, age int);
		INSERT INTO people SELECT g, 'p' || g, g FROM generate_series(1, 100) g;
		CREATE PUBLICATION ppl_pub FOR TABLE people;`)
	out, err := runOnce(t, "setup", "--print")
	if err != nil || !strings.Contains(out, "CREATE EVENT TRIGGER pg2iceberg_ddl") {
		t.Fatalf("setup --print: %v\n%s", err, out)
	}
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	tg := localTarget(t)
	const flush = 2 * time.Second
	b := startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "ppl_pub", "--flush-interval", flush.String()}, tg.args()...)...)
	waitSlot(t, conn, "pg2iceberg_ppl_pub", b)
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, jar)
	before := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, "public.people") {
		before[f.Name] = f.ID
	}
	preRename := loadTable(t, tg, "public.people").CurrentSnapshot().SnapshotID
	preRenameCols := sparkColumnsOf(t, pgFields(t, conn, "people"))
	preRenameRows := pgRows(t, conn, `id::text AS id, name, age::text AS age`, "people")
	// The rename must show within 2 flush intervals: Spark's start, which
	// keeps both cores busy for a while, is over first.
	spark.wait(t)

	// A rename with no row change: visible within 2 x flush interval.
	exec1(t, conn, `ALTER TABLE people RENAME COLUMN name TO full_name`)
	waitColumns(t, tg, "public.people", "id,full_name,age", time.Now(), 2*flush, "the rename")
	for _, f := range pyicebergSchema(t, tg, "public.people") {
		if f.Name == "full_name" && f.ID != before["name"] {
			t.Errorf("renamed column has field id %d, want %d (the old one)", f.ID, before["name"])
		}
	}
	// Spark reads the renamed column, from files written before the rename.
	sparkChecksTable(t, spark, tg, conn, "people", "public.people", "id",
		pgRows(t, conn, `id::text AS id, full_name, age::text AS age`, "people"), 0, "the rename")
	// Rename, then add a column under the old name, in one transaction.
	exec1(t, conn, `UPDATE people SET full_name = 'renamed ' || id WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	preYears := loadTable(t, tg, "public.people").CurrentSnapshot().SnapshotID
	preYearsCols := sparkColumnsOf(t, pgFields(t, conn, "people"))
	preYearsRows := pgRows(t, conn, `id::text AS id, full_name, age::text AS age`, "people")
	since := walLSN(t, conn)
	tx := `BEGIN; ALTER TABLE people RENAME COLUMN age TO years; ALTER TABLE people ADD COLUMN age text; UPDATE people SET age = 'a' || years WHERE id <= 5; COMMIT;`
	if err := pg.Exec(ctx, tx); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, conn, "pg2iceberg_ppl_pub", b)
	b.stop(t)
	if got := names(pyicebergSchema(t, tg, "public.people")); got != "id,full_name,years,age" {
		t.Errorf("columns %s, want id,full_name,years,age", got)
	}
	for _, f := range pyicebergSchema(t, tg, "public.people") {
		if f.Name == "years" && f.ID != before["age"] {
			t.Errorf("years has field id %d, want %d (age's)", f.ID, before["age"])
		}
	}
	want := pgRows(t, conn, `id::text AS id, full_name, years::text AS years, age`, "people")
	compareRows(t, "pyiceberg", "people", "id", pyicebergRows(t, tg, "public.people"), want)
	compareRows(t, "iceberg-go", "people", "id", icegoRows(t, tg, "public.people"), want)
	if cl := pyicebergRows(t, tg, "public.people__changelog"); len(cl) != 15 {
		t.Errorf("changelog has %d rows, want 15", len(cl))
	}
	// Time travel to before the rename reads the old schema and values.
	old := icegoScan(t, loadTable(t, tg, "public.people"), table.WithSnapshotID(preRename))
	if len(old) != 100 {
		t.Fatalf("time travel to snapshot %d: %d rows, want 100", preRename, len(old))
	}
	for _, r := range old {
		if r["name"] != "p"+fmt.Sprint(r["id"]) || r["full_name"] != nil {
			t.Fatalf("time travel to before the rename: row %v, want name = p<id> and no full_name", r)
		}
	}
	t.Logf("time travel to snapshot %d reads the old column name and values", preRename)
	sparkChecksTable(t, spark, tg, conn, "people", "public.people", "id", want, since, "renaming age to years and adding age")
	sparkRenamedChanges(t, spark, tg, since, preYearsRows)
	// Spark's time travel reads each snapshot's schema: before the first
	// rename, name; before the second, age as the int column years is now.
	sparkReads(t, spark, fmt.Sprintf("public.people VERSION AS OF %d (before the rename of name)", preRename),
		fmt.Sprintf("pg.public.people VERSION AS OF %d", preRename), preRenameCols, "id", preRenameRows)
	sparkReads(t, spark, fmt.Sprintf("public.people VERSION AS OF %d (before the rename of age)", preYears),
		fmt.Sprintf("pg.public.people VERSION AS OF %d", preYears), preYearsCols, "id", preYearsRows)
	if out, err := runOnce(t, "setup", "--uninstall", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup --uninstall: %v\n%s", err, out)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_event_trigger WHERE evtname = 'pg2iceberg_ddl'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("event trigger still installed (%d, %v)", n, err)
	}
	t.Logf("Spark session up in %.0fs; total %.0fs", spark.upAfter.Seconds(), time.Since(began).Seconds())
}

// sparkRenamedChanges: the changes to people committed before since,
// updates of full_name made while age was the int column, read in Spark
// under today's schema: the old age's values are in years (a rename keeps
// the field), and the new age is NULL (a new field). Spark and pyiceberg
// read the whole changelog alike. old is people's rows before since.
func sparkRenamedChanges(t *testing.T, spark *sparkSession, tg target, since pglogrepl.LSN, old []row) {
	t.Helper()
	sparkChangelogAsPyiceberg(t, spark, tg, "public.people")
	got, ok := spark.dump(t, fmt.Sprintf("SELECT after.* FROM pg.public.people__changelog WHERE lsn < %d AND op = 'U'", uint64(since)))
	if !ok {
		return
	}
	var want []row
	for _, r := range old {
		if strings.HasPrefix(fmt.Sprint(r["full_name"]), "renamed ") {
			want = append(want, row{"id": r["id"], "full_name": r["full_name"], "years": r["age"], "age": nil})
		}
	}
	if len(want) == 0 {
		t.Fatal("no renamed rows before the second rename")
	}
	compareRows(t, "Spark SQL", "public.people__changelog (after images of the updates before age became years)", "id", got, want)
}
