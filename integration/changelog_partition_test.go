package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A changelog's partition spec: the default day(commit_ts); a spec
// another writer sets (as Spark's ALTER TABLE ... ADD PARTITION FIELD
// does) with the configuration unchanged, which the bridge follows; and
// changelog_partition in the configuration, which becomes a new spec at
// the next start. Every file's partition values hold for its rows (scans
// filtered on a partition source, which prune by them, find every row a
// full scan finds), and pyiceberg, Spark and DuckDB read every change.
func TestChangelogPartitionSpec(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE cl (id int PRIMARY KEY, v text);
		INSERT INTO cl SELECT g, 'v' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION cl_pub FOR TABLE cl;`)
	const slot, name = "pg2iceberg_cl_pub", "public.cl__changelog"
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	writeCfg := func(entry string) {
		if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.cl\n    compaction: {enabled: false}\n"+entry), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("")
	tg := localTarget(t)
	changes := int64(0)
	// round makes inserts, updates and deletes in one transaction and a
	// few more transactions (several ops and xids in one flush).
	round := func(r int) {
		base := 1000 * r
		exec1(t, conn, fmt.Sprintf(`BEGIN;
			INSERT INTO cl SELECT g, 'n' || g FROM generate_series(%[1]d, %[1]d + 9) g;
			UPDATE cl SET v = v || 'u' WHERE id %% 10 = %[2]d AND id < 1000;
			DELETE FROM cl WHERE id = %[1]d + 9;
			COMMIT`, base, r%10))
		changes += 10 + 5 + 1
		for i := range 4 {
			exec1(t, conn, fmt.Sprintf(`INSERT INTO cl VALUES (%d, 'x')`, base+100+i))
			changes++
		}
	}
	run := func(rounds ...int) {
		b := startBridge(t, nil, runArgs(pg, "cl_pub", tg, "--config", cfg)...)
		waitSlot(t, conn, slot, b)
		for _, r := range rounds {
			round(r)
		}
		waitCaughtUp(t, conn, slot, b)
		b.stop(t)
		if strings.Contains(b.log(), "level=ERROR") {
			t.Fatalf("the bridge logged an error:\n%s", tail(b.log(), 30))
		}
	}
	run(1, 2)
	if spec := loadTable(t, tg, name).Spec(); spec.NumFields() != 1 || spec.Field(0).Name != "commit_ts_day" {
		t.Fatalf("%s's spec is %s, want day(commit_ts)", name, spec)
	}
	checkChangelogExact(t, tg, "public.cl", changes)

	// Another writer partitions the changelog by op too: the bridge
	// writes under that spec, one file per op.
	tbl := loadTable(t, tg, name)
	txn := tbl.NewTransaction()
	if err := txn.UpdateSpec(true).AddIdentity("op").Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(3, 4)
	checkChangelogExact(t, tg, "public.cl", changes)
	checkPartitionsHold(t, tg, name, "op", []any{"I", "U", "D"})

	// The configuration's spec: hour and a bucket of the xid.
	writeCfg(`    changelog_partition: ["hour(commit_ts)", "bucket(4, xid)"]` + "\n")
	run(5, 6, 7)
	tbl = loadTable(t, tg, name)
	if spec := tbl.Spec(); spec.NumFields() != 2 || spec.Field(0).Name != "commit_ts_hour" || spec.Field(1).Name != "xid_bucket_4" {
		t.Errorf("%s's spec after changelog_partition is %s, want commit_ts_hour and xid_bucket_4", name, spec)
	}
	if n := len(tbl.Metadata().PartitionSpecs()); n != 3 {
		t.Errorf("%s has %d specs, want 3 (day; day and op; hour and xid bucket)", name, n)
	}
	specs := map[int]int{}
	for _, f := range liveFilesOf(t, tbl) {
		specs[f.spec]++
	}
	if len(specs) != 3 {
		t.Errorf("%s's live files are under specs %v, want files under each of its 3 specs (old files keep theirs)", name, specs)
	}
	checkChangelogExact(t, tg, "public.cl", changes)
	var xids []any
	for _, r := range icegoRows(t, tg, name) {
		xids = append(xids, r["xid"])
	}
	checkPartitionsHold(t, tg, name, "xid", xids)
	checkPartitionsHold(t, tg, name, "op", []any{"I", "U", "D"})

	// The same configuration at the next start keeps the spec; removing
	// it goes back to the default.
	run(8)
	if n := len(loadTable(t, tg, name).Metadata().PartitionSpecs()); n != 3 {
		t.Errorf("%s has %d specs after a start with the same configuration, want 3", name, n)
	}
	writeCfg("")
	run(9)
	if spec := loadTable(t, tg, name).Spec(); spec.NumFields() != 1 || spec.Field(0).Name != "commit_ts_day" {
		t.Errorf("%s's spec after changelog_partition was removed is %s, want day(commit_ts) again", name, spec)
	}
	checkChangelogExact(t, tg, "public.cl", changes)

	// Readers we did not write read every change.
	if n := len(pyicebergRows(t, tg, name)); int64(n) != changes {
		t.Errorf("pyiceberg read %d rows of %s, want %d", n, name, changes)
	}
	if got, want := duckdbRow(t, "SELECT count(*) FROM iceberg_scan(?)", filepath.Join(tg.warehouse, "public.db", "cl__changelog")), fmt.Sprintf("(%d,)", changes); got != want {
		t.Errorf("DuckDB count(*) of %s = %s, want %s", name, got, want)
	}
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))
	if rows, ok := spark.dump(t, "SELECT CAST(count(*) AS STRING) AS n, CAST(count(DISTINCT xid) AS STRING) AS x FROM pg.public.cl__changelog WHERE op = 'D'"); ok {
		d, x := 0, map[any]bool{}
		for _, r := range icegoRows(t, tg, name) {
			if r["op"] == "D" {
				d++
				x[r["xid"]] = true
			}
		}
		if len(rows) != 1 || rows[0]["n"] != fmt.Sprint(d) || rows[0]["x"] != fmt.Sprint(len(x)) {
			t.Errorf("Spark deletes of %s: %v, want %d in %d transactions", name, rows, d, len(x))
		}
	}
}

// checkPartitionsHold requires, for each value of column col, that a scan
// filtered on col = value (which iceberg-go prunes by the files'
// partition values) finds every row a full scan finds: a file whose
// partition values lied about its rows would be skipped.
func checkPartitionsHold(t *testing.T, tg target, name, col string, values []any) {
	t.Helper()
	tbl := loadTable(t, tg, name)
	all := icegoScan(t, tbl)
	seen := map[string]bool{}
	for _, v := range values {
		key := fmt.Sprint(v)
		if seen[key] {
			continue
		}
		seen[key] = true
		want := 0
		for _, r := range all {
			if fmt.Sprint(r[col]) == key {
				want++
			}
		}
		var lit icego.BooleanExpression
		switch col {
		case "op":
			lit = icego.EqualTo(icego.Reference(col), key)
		default:
			var n int64
			if _, err := fmt.Sscan(key, &n); err != nil {
				t.Fatalf("%s = %q: %v", col, key, err)
			}
			lit = icego.EqualTo(icego.Reference(col), n)
		}
		if got := len(icegoScan(t, tbl, table.WithRowFilter(lit))); got != want {
			t.Errorf("%s: a scan filtered on %s = %s finds %d rows, a full scan %d: a file's partition values do not hold for its rows", name, col, key, got, want)
		}
	}
}
