package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// setupDropB installs the DDL capture in pg and returns a config file that
// gives public.b the drop_table: drop policy (the others keep).
func setupDropB(t *testing.T, pg *harness.Postgres) string {
	t.Helper()
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.b\n    drop_table: drop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Mirrored tables dropped while the bridge is stopped, with the DDL
// capture: the start does not open them (they are not published any
// more), and their signed DROP TABLE events then name tables the bridge
// has no relation for. Their Iceberg tables are found by
// pg2iceberg.source-oid (one of them renamed while the bridge streamed, so
// not under the dropped table's name) and get their drop_table policy:
// keep marks them, drop removes them. The rows changed before the drop
// are skipped (the table cannot be copied any more), the others stream on.
func TestDropWhileStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (id int PRIMARY KEY, v text);
		CREATE TABLE c (id int PRIMARY KEY, v text);
		INSERT INTO a VALUES (1, 'a1');
		INSERT INTO b VALUES (1, 'b1');
		INSERT INTO c VALUES (1, 'c1');
		CREATE PUBLICATION ds_pub FOR TABLE a, b, c;`)
	cfg := setupDropB(t, pg)
	tg := localTarget(t)
	run := runArgs(pg, "ds_pub", tg, "--config", cfg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ds_pub", b)
	exec1(t, conn, `ALTER TABLE a RENAME TO a2`)
	exec1(t, conn, `UPDATE a2 SET v = 'a1 renamed'`)
	waitCaughtUp(t, conn, "pg2iceberg_ds_pub", b)
	b.stop(t)

	exec1(t, conn, `UPDATE a2 SET v = 'a1 last'`)
	exec1(t, conn, `DROP TABLE a2`)
	exec1(t, conn, `DROP TABLE b`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ds_pub", b)
	exec1(t, conn, `UPDATE c SET v = 'c after'`)
	waitCaughtUp(t, conn, "pg2iceberg_ds_pub", b)
	b.stop(t)

	for _, name := range []string{"public.a2", "public.a2__changelog"} {
		if p := loadTable(t, tg, name).Properties()[iceberg.PropDropped]; !strings.Contains(p, `"lsn"`) {
			t.Errorf("%s: property %s = %q, want the drop's LSN and time (drop_table: keep)\n%s", name, iceberg.PropDropped, p, tail(b.log(), 15))
		}
	}
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []table.Identifier{{"public", "b"}, {"public", "b__changelog"}} {
		if _, err := cat.LoadTable(ctx, gone); !errors.Is(err, catalog.ErrNoSuchTable) {
			t.Errorf("%v with drop_table: drop, dropped while stopped: %v, want no such table", gone, err)
		}
	}
	if _, ok := loadTable(t, tg, "public.c").Properties()[iceberg.PropDropped]; ok {
		t.Errorf("public.c is marked dropped")
	}
	compareRows(t, "pyiceberg", "c", "id", pyicebergRows(t, tg, "public.c"), pgRows(t, conn, "id::text AS id, v", "c"))
}
