package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// currentSnapshots returns each named table's current snapshot id, 0 for a
// table without one or not created yet.
func currentSnapshots(t *testing.T, tg target, names ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	withCatalog(t, tg, func(ctx context.Context, cat catalog.Catalog) {
		for _, name := range names {
			ns, tb, _ := strings.Cut(name, ".")
			tbl, err := cat.LoadTable(ctx, table.Identifier{ns, tb})
			switch {
			case errors.Is(err, catalog.ErrNoSuchTable):
				out[name] = 0
			case err != nil:
				t.Fatalf("load %s: %v", name, err)
			case tbl.CurrentSnapshot() != nil:
				out[name] = tbl.CurrentSnapshot().SnapshotID
			default:
				out[name] = 0
			}
		}
	})
	return out
}

// Restarts in the awkward places: an initial copy killed between two
// tables copies the rest, each in a snapshot of its own; a clean restart loads the persisted key index; a lost
// slot is recreated and the new copy replaces the mirror's old rows.
func TestRestarts(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	args := runArgs(pg, "shop_pub", tg)
	const slot = "pg2iceberg_shop_pub"

	// 1. Killed after the first table's copy.
	b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=copy-done:1"}, args...)
	b.crashed(t, time.Minute)
	before := currentSnapshots(t, tg, cust, ord)
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	if !strings.Contains(b.log(), `msg="table sync finished"`) {
		t.Fatalf("the table whose copy was interrupted was not copied again; log:\n%s", tail(b.log(), 20))
	}
	// The table copied before the kill keeps its snapshot (not copied
	// again); the other is copied now, in a snapshot of its own.
	after := currentSnapshots(t, tg, cust, ord)
	kept := 0
	for name, id := range before {
		switch {
		case id != 0 && after[name] != id:
			t.Errorf("%s was copied before the kill (snapshot %d) but its snapshot is %d after the restart: copied again", name, id, after[name])
		case id != 0:
			kept++
		case after[name] == 0:
			t.Errorf("%s has no snapshot after the restart's copy", name)
		}
	}
	if kept != 1 {
		t.Errorf("snapshots at the kill %v, want exactly one of the two mirrors copied (the crash point is after the first table)", before)
	}
	exec1(t, conn, `UPDATE shop.orders SET status = 'one' WHERE id <= 50`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)

	// 2. A clean restart loads the key index instead of reading the tables.
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	if !strings.Contains(b.log(), `msg="key index loaded" table=shop.orders`) {
		t.Errorf("key index of shop.orders was not loaded from its file; log:\n%s", tail(b.log(), 20))
	}
	exec1(t, conn, `UPDATE shop.orders SET status = 'two' WHERE id <= 25`)
	exec1(t, conn, `DELETE FROM shop.orders WHERE id > 490`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	want := pgRows(t, conn, ordersSelect, ord)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), want)

	// 3. The slot is lost; rows change while nobody streams; a new copy
	// must replace what the mirror held.
	exec1(t, conn, `SELECT pg_drop_replication_slot($1)`, slot)
	exec1(t, conn, `DELETE FROM shop.orders WHERE id <= 10`)
	exec1(t, conn, `UPDATE shop.customers SET name = 'renamed' WHERE id = 42`)
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), pgRows(t, conn, ordersSelect, ord))
	compareRows(t, "iceberg-go", cust, "id", icegoRows(t, tg, cust), pgRows(t, conn, customersSelect, cust))
}
