package integration

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// metricValue reads one unlabelled counter or gauge from /metrics.
func metricValue(t *testing.T, addr, name string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The text format writes every value as a float: 1.2345678e+07.
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([-+.0-9e]+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics lacks %s:\n%s", name, body)
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || f != math.Trunc(f) {
		t.Fatalf("/metrics: %s is %s, not an integer", name, m[1])
	}
	return int64(f)
}

// pause stops the bridge process (SIGSTOP) so that it lags behind what is
// committed, still connected; resume lets it go on.
func (b *bridge) pause(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

func (b *bridge) resume(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// checkSkipped checks that the bridge warned once that table's changes
// are skipped, and that it counts want skipped changes (metrics at addr).
func checkSkipped(t *testing.T, b *bridge, addr, table string, want int64) {
	t.Helper()
	w := `msg="table gone or no longer published: its changes are skipped" table=` + table + ` `
	if n := strings.Count(b.log(), w); n != 1 {
		t.Errorf("%d warnings that %s's changes are skipped, want 1:\n%s", n, table, tail(b.log(), 20))
	}
	if n := metricValue(t, addr, "pg2iceberg_changes_skipped_total"); n != want {
		t.Errorf("pg2iceberg_changes_skipped_total = %d, want %d (%s's changes)", n, want, table)
	}
}

// skipCheck is what restartSkipping checks.
type skipCheck struct {
	run         []string // the bridge's arguments
	slot, addr  string   // its slot and metrics address
	other, gone string   // a table still published; one whose changes are skipped
	skipped     int64    // how many of gone's changes
	goneRows    []row    // gone's mirror as it was before the bridge stopped
}

// restartSkipping starts the bridge again after a table was changed and
// then dropped or removed from the publication while it was stopped: the
// bridge skips the table's changes with a warning and a count, goes on
// (a row inserted into other after the start arrives), and gone's mirror
// stays as it was.
func restartSkipping(t *testing.T, conn *pgx.Conn, tg target, c skipCheck) {
	t.Helper()
	b := startBridge(t, nil, c.run...)
	waitSlot(t, conn, c.slot, b)
	exec1(t, conn, `INSERT INTO `+c.other+` VALUES (51, 'after the restart')`)
	waitCaughtUp(t, conn, c.slot, b)
	checkSkipped(t, b, c.addr, "public."+c.gone, c.skipped)
	b.stop(t)
	compareRows(t, "pyiceberg", c.other+" after the restart", "id", pyicebergRows(t, tg, "public."+c.other), pgRows(t, conn, "id::text AS id, v", c.other))
	compareRows(t, "pyiceberg", c.gone+" (as before the bridge stopped)", "id", pyicebergRows(t, tg, "public."+c.gone), c.goneRows)
}

// noTable checks that the catalog has no Iceberg table ident.
func noTable(t *testing.T, tg target, ident table.Identifier) {
	t.Helper()
	cat, err := iceberg.OpenCatalog(context.Background(), iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(context.Background(), ident); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("%v: %v, want no such table", ident, err)
	}
}

// A FOR ALL TABLES publication: a staging table created, filled and
// dropped in one transaction while the bridge streams, and a mirrored table
// changed and then dropped while the bridge is stopped. Their changes can
// no longer be copied or described by the catalog: they are skipped with a
// warning naming the table and a count, the other table's mirror stays
// exact and the stream goes on. The DDL capture, installed while the bridge
// streams, has its key in a table of this publication, never mirrored.
func TestChangesOfDroppedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE keep (id int PRIMARY KEY, v text);
		CREATE TABLE doomed (id int PRIMARY KEY, v text);
		INSERT INTO keep SELECT g, 'k' || g FROM generate_series(1, 50) g;
		INSERT INTO doomed SELECT g, 'd' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION all_pub FOR ALL TABLES;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	run := runArgs(pg, "all_pub", tg, "--metrics-addr", addr)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_all_pub", b)
	if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if err := pg.Exec(ctx, `BEGIN; CREATE TABLE staging (id int PRIMARY KEY, v text);
		INSERT INTO staging SELECT g, 's' || g FROM generate_series(1, 30) g; UPDATE staging SET v = 'x';
		DROP TABLE staging; COMMIT;`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `UPDATE keep SET v = 'after staging' WHERE id <= 5`)
	waitCaughtUp(t, conn, "pg2iceberg_all_pub", b)
	checkSkipped(t, b, addr, "public.staging", 60) // its inserts and updates
	want := func(table string) []row { return pgRows(t, conn, "id::text AS id, v", table) }
	compareRows(t, "pyiceberg", "keep", "id", pyicebergRows(t, tg, "public.keep"), want("keep"))
	b.stop(t)

	doomed := want("doomed")
	exec1(t, conn, `UPDATE doomed SET v = 'lost' WHERE id <= 10`)
	exec1(t, conn, `DELETE FROM doomed WHERE id > 40`)
	exec1(t, conn, `DROP TABLE doomed`)
	exec1(t, conn, `UPDATE keep SET v = 'while stopped' WHERE id > 45`)
	restartSkipping(t, conn, tg, skipCheck{run: run, slot: "pg2iceberg_all_pub", addr: addr, other: "keep", gone: "doomed", skipped: 20, goneRows: doomed})
	for _, ident := range []table.Identifier{{"public", "staging"}, {"pg2iceberg", "secret"}, {"pg2iceberg", "secret__changelog"}} {
		noTable(t, tg, ident)
	}
}

// A table joins the publication, is changed and leaves it again while the
// bridge lags behind (paused), and a mirrored table is changed and removed
// from the publication while the bridge is stopped. The changes made while
// they were published are skipped with a warning and a count (the first
// table never had a copy, the second is no longer mirrored); the other
// table's mirror stays exact and the stream goes on.
func TestChangesOfUnpublishedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (id int PRIMARY KEY, v text);
		CREATE TABLE c (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 50) g;
		INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 50) g;
		INSERT INTO c SELECT g, 'c' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION ab_pub FOR TABLE a, b;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	run := runArgs(pg, "ab_pub", tg, "--metrics-addr", addr)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_ab_pub", b)
	b.pause(t)
	if err := pg.Exec(ctx, `ALTER PUBLICATION ab_pub ADD TABLE c;
		UPDATE c SET v = 'published for a while' WHERE id <= 10;
		ALTER PUBLICATION ab_pub DROP TABLE c;
		UPDATE c SET v = 'not published' WHERE id > 40;
		UPDATE a SET v = 'after c' WHERE id <= 5;`); err != nil {
		t.Fatal(err)
	}
	b.resume(t)
	waitCaughtUp(t, conn, "pg2iceberg_ab_pub", b)
	checkSkipped(t, b, addr, "public.c", 10) // its updates while published
	want := func(table string) []row { return pgRows(t, conn, "id::text AS id, v", table) }
	compareRows(t, "pyiceberg", "a", "id", pyicebergRows(t, tg, "public.a"), want("a"))
	compareRows(t, "pyiceberg", "b", "id", pyicebergRows(t, tg, "public.b"), want("b"))
	b.stop(t)

	bRows := want("b")
	exec1(t, conn, `UPDATE b SET v = 'lost' WHERE id <= 10`)
	exec1(t, conn, `ALTER PUBLICATION ab_pub DROP TABLE b`)
	exec1(t, conn, `UPDATE a SET v = 'while stopped' WHERE id > 45`)
	restartSkipping(t, conn, tg, skipCheck{run: run, slot: "pg2iceberg_ab_pub", addr: addr, other: "a", gone: "b", skipped: 10, goneRows: bRows})
	for _, ident := range []table.Identifier{{"public", "c"}, {"public", "c__changelog"}} {
		noTable(t, tg, ident)
	}
}
