package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A renamed table keeps its files where they were (under its old name),
// so when the catalog is lost afterwards, repair cannot find the table
// at <warehouse>/<namespace>.db/<new name>: it says where it looked, and
// with --location (the old directory) it registers the table again, the
// dry run first changing nothing. The bridge then goes on streaming into
// the repaired tables.
func TestRepairLocation(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE PUBLICATION rl_pub FOR TABLE t;
		INSERT INTO t SELECT g, 'v' FROM generate_series(1, 20) g;`)
	tg := localTarget(t)
	run := runArgs(pg, "rl_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rl_pub", b)
	exec1(t, conn, `ALTER TABLE t RENAME TO t2`)
	exec1(t, conn, `INSERT INTO t2 VALUES (21, 'after the rename')`)
	waitCaughtUp(t, conn, "pg2iceberg_rl_pub", b)
	b.stop(t)
	for _, name := range []string{"t", "t__changelog"} {
		if _, err := os.Stat(filepath.Join(tg.warehouse, "public.db", name, "metadata")); err != nil {
			t.Fatalf("the renamed table's files are not under its old name: %v", err)
		}
	}

	for _, suffix := range []string{"", "-wal", "-shm"} { // the catalog is lost
		if err := os.Remove(tg.catalog + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	repair := append([]string{"repair"}, tg.args()...)
	runCLICases(t, []cliCase{
		{name: "repair of the renamed table without --location", args: append(slices.Clone(repair), "public.t2"),
			fails: true, want: []string{"no metadata files under", filepath.Join("public.db", "t2", "metadata")}},
	})
	for _, name := range []string{"t", "t__changelog"} {
		loc := "file://" + mustAbs(t, filepath.Join(tg.warehouse, "public.db", name))
		ident := "public." + strings.Replace(name, "t", "t2", 1)
		runCLICases(t, []cliCase{
			{name: "repair --dry-run --location of " + ident, args: append(slices.Clone(repair), "--dry-run", "--location", loc, ident),
				want: []string{ident + ": would point the catalog at " + loc + "/metadata/", "(now (no entry))"}},
			{name: "repair --location of " + ident, args: append(slices.Clone(repair), "--location", loc, ident),
				want: []string{ident + ": the catalog now points at " + loc + "/metadata/", "(was (no entry))"}},
			{name: "repair --location of " + ident + " again", args: append(slices.Clone(repair), "--location", loc, ident),
				want: []string{ident + ": the catalog already points at the newest valid metadata"}},
		})
	}
	compareRows(t, "iceberg-go (repaired)", "public.t2", "id", icegoRows(t, tg, "public.t2"), pgRows(t, conn, "id::text AS id, v", "t2"))

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rl_pub", b)
	exec1(t, conn, `UPDATE t2 SET v = 'after the repair' WHERE id <= 5`)
	exec1(t, conn, `DELETE FROM t2 WHERE id > 18`)
	waitCaughtUp(t, conn, "pg2iceberg_rl_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go (streamed after the repair)", "public.t2", "id", icegoRows(t, tg, "public.t2"), pgRows(t, conn, "id::text AS id, v", "t2"))
	changes := 0
	for _, c := range pyicebergRows(t, tg, "public.t2__changelog") {
		if c["op"] != "R" {
			changes++
		}
	}
	if want := 1 + 5 + 3; changes != want {
		t.Errorf("changelog of public.t2 holds %d changes, want %d (the insert after the rename, 5 updates and 3 deletes)", changes, want)
	}
}
