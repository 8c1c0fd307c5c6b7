package integration

import (
	"strings"
	"testing"
	"time"
)

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
	b.exited(t, time.Minute)
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	if !strings.Contains(b.log(), `msg="table sync finished"`) {
		t.Fatalf("the table whose copy was interrupted was not copied again; log:\n%s", tail(b.log(), 20))
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
