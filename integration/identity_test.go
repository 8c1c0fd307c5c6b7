package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// A published table dropped and created again under the same name while
// the bridge is stopped is another table: the restart copies it afresh, and
// its old Iceberg tables go by the drop_table policy (keep: renamed aside to
// <name>__dropped_<old oid>, marked dropped, still readable; drop: gone).
// Nothing of the old table shows in the new mirror or changelog. Tables
// that do not record their source table yet (written before it was
// recorded) are adopted at start, not copied again.
func TestTableRecreated(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"keep", "drop"} {
		t.Run(policy, func(t *testing.T) {
			ctx := context.Background()
			pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
				INSERT INTO t SELECT g, 'old' || g FROM generate_series(1, 10) g;
				CREATE PUBLICATION rt_pub FOR TABLE t;`)
			cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
			if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.t\n    drop_table: "+policy+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tg := localTarget(t)
			run := runArgs(pg, "rt_pub", tg, "--config", cfg)
			b := startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_rt_pub", b)
			exec1(t, conn, `UPDATE t SET v = 'old, updated' WHERE id = 3`)
			waitCaughtUp(t, conn, "pg2iceberg_rt_pub", b)
			b.stop(t)
			var oldOID uint32
			if err := conn.QueryRow(ctx, `SELECT 't'::regclass::oid`).Scan(&oldOID); err != nil {
				t.Fatal(err)
			}
			oldRows := pgRows(t, conn, "id::text AS id, v", "t")
			oldLocation := loadTable(t, tg, "public.t").Location()

			for _, name := range []string{"t", "t__changelog"} {
				if got := loadTable(t, tg, "public."+name).Properties()[iceberg.PropSourceOID]; got != fmt.Sprint(oldOID) {
					t.Errorf("%s: %s = %q, want %d", name, iceberg.PropSourceOID, got, oldOID)
				}
			}
			// Tables written before the source table was recorded are adopted.
			for _, name := range []string{"t", "t__changelog"} {
				tbl := loadTable(t, tg, "public."+name)
				txn := tbl.NewTransaction()
				if err := txn.RemoveProperties([]string{iceberg.PropSourceOID}); err != nil {
					t.Fatal(err)
				}
				if _, err := txn.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			b = startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_rt_pub", b)
			b.stop(t)
			if strings.Contains(b.log(), `msg="copy started"`) {
				t.Errorf("a table without a recorded source table was copied again:\n%s", tail(b.log(), 10))
			}
			for _, name := range []string{"t", "t__changelog"} {
				if got := loadTable(t, tg, "public."+name).Properties()[iceberg.PropSourceOID]; got != fmt.Sprint(oldOID) {
					t.Errorf("%s after adoption: %s = %q, want %d", name, iceberg.PropSourceOID, got, oldOID)
				}
			}

			// While the bridge is stopped: the same name, another table.
			if err := pg.Exec(ctx, `DROP TABLE t;
				CREATE TABLE t (id int PRIMARY KEY, v text);
				ALTER PUBLICATION rt_pub ADD TABLE t;
				INSERT INTO t SELECT g, 'new' || g FROM generate_series(5, 15) g;`); err != nil {
				t.Fatal(err)
			}
			b = startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_rt_pub", b)
			exec1(t, conn, `UPDATE t SET v = 'new, updated' WHERE id = 6`)
			exec1(t, conn, `DELETE FROM t WHERE id = 7`)
			waitCaughtUp(t, conn, "pg2iceberg_rt_pub", b)
			b.stop(t)

			want := pgRows(t, conn, "id::text AS id, v", "t")
			compareRows(t, "pyiceberg", "t (created again)", "id", pyicebergRows(t, tg, "public.t"), want)
			compareRows(t, "iceberg-go", "t (created again)", "id", icegoRows(t, tg, "public.t"), want)
			if got := changelogOps(t, tg, "public.t__changelog"); got != "D,U" {
				t.Errorf("new changelog ops %s, want D,U (the old table's update is not in it)", got)
			}
			if loc := loadTable(t, tg, "public.t").Location(); loc == oldLocation {
				t.Errorf("the new mirror shares the old one's location %s", loc)
			}
			checkAside(t, tg, policy, oldOID, oldRows, "U")

			// While the bridge streams, without the DDL capture (which would
			// apply the DROP by the policy): the same again.
			var midOID uint32
			if err := conn.QueryRow(ctx, `SELECT 't'::regclass::oid`).Scan(&midOID); err != nil {
				t.Fatal(err)
			}
			midRows := want
			b = startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_rt_pub", b)
			exec1(t, conn, `UPDATE t SET v = 'new, updated again' WHERE id = 8`)
			if err := pg.Exec(ctx, `UPDATE t SET v = 'new, last' WHERE id = 9;
				DROP TABLE t;
				CREATE TABLE t (id int PRIMARY KEY, v text);
				ALTER PUBLICATION rt_pub ADD TABLE t;
				INSERT INTO t SELECT g, 'newer' || g FROM generate_series(20, 25) g;`); err != nil {
				t.Fatal(err)
			}
			waitLog(t, b, `msg="table sync finished" table=public.t`)
			exec1(t, conn, `UPDATE t SET v = 'newer, updated' WHERE id = 21`)
			waitCaughtUp(t, conn, "pg2iceberg_rt_pub", b)
			b.stop(t)
			want = pgRows(t, conn, "id::text AS id, v", "t")
			compareRows(t, "pyiceberg", "t (created again while streaming)", "id", pyicebergRows(t, tg, "public.t"), want)
			if got := changelogOps(t, tg, "public.t__changelog"); got != "U" {
				t.Errorf("newest changelog ops %s, want U", got)
			}
			for _, r := range midRows {
				switch r["id"] {
				case "8":
					r["v"] = "new, updated again"
				case "9":
					r["v"] = "new, last"
				}
			}
			checkAside(t, tg, policy, midOID, midRows, "D,U,U,U")
		})
	}
}

// checkAside checks where the Iceberg tables of dropped source table oid
// went by policy: kept as public.t__dropped_<oid> (and its changelog, with
// the ops given), marked dropped, holding rows; or dropped.
func checkAside(t *testing.T, tg target, policy string, oid uint32, rows []row, ops string) {
	t.Helper()
	aside := fmt.Sprintf("t__dropped_%d", oid)
	names := tableNames(t, tg, "public")
	if policy == "drop" {
		if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "__dropped_") }) {
			t.Errorf("tables %v with drop_table: drop, want no table kept aside", names)
		}
		return
	}
	if !slices.Contains(names, aside) || !slices.Contains(names, aside+"__changelog") {
		t.Fatalf("tables %v, want %s and its changelog", names, aside)
	}
	compareRows(t, "pyiceberg", aside+" (a dropped table, kept)", "id", pyicebergRows(t, tg, "public."+aside), rows)
	if got := changelogOps(t, tg, "public."+aside+"__changelog"); got != ops {
		t.Errorf("%s__changelog ops %s, want %s", aside, got, ops)
	}
	for _, name := range []string{aside, aside + "__changelog"} {
		if p := loadTable(t, tg, "public."+name).Properties()[iceberg.PropDropped]; !strings.Contains(p, fmt.Sprintf(`"oid":%d`, oid)) {
			t.Errorf("%s: %s = %q, want a mark naming OID %d", name, iceberg.PropDropped, p, oid)
		}
	}
}
