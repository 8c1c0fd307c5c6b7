package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// pg2iceberg backfill --table re-copies one table while the bridge is
// stopped; the next run continues streaming on top of it, exactly once.
// The changelog keeps its history, records the resync as one R row, and
// still gets the changes made while the bridge was stopped.
func TestBackfillCommand(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "shop_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s"}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	exec1(t, conn, `UPDATE shop.orders SET status = 'a' WHERE id <= 100`)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)

	out, err := runOnce(t, append([]string{"backfill", "--table", "shop.orders"}, common...)...)
	if err == nil || !strings.Contains(out, "in use") {
		t.Fatalf("backfill with the bridge running: err %v, output:\n%s", err, out)
	}
	b.stop(t)
	exec1(t, conn, `UPDATE shop.orders SET status = 'b' WHERE id > 400`)
	exec1(t, conn, `DELETE FROM shop.orders WHERE id % 50 = 0`)
	out, err = runOnce(t, append([]string{"backfill", "--table", "shop.orders"}, common...)...)
	if err != nil || !strings.Contains(out, "table sync finished") {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	exec1(t, conn, `UPDATE shop.orders SET status = 'c' WHERE id < 10`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), pgRows(t, conn, ordersSelect, ord))

	ops := map[string]int{}
	for _, c := range pyicebergRows(t, tg, ord+"__changelog") {
		ops[fmt.Sprint(c["op"])]++
		if c["op"] == "R" && (c["before"] != nil || c["after"] != nil) {
			t.Errorf("resync row with images: %v", c)
		}
	}
	var deleted int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM generate_series(1, 500) g WHERE g % 50 = 0`).Scan(&deleted); err != nil {
		t.Fatal(err)
	}
	// The updates: 100 streamed (id <= 100), 100 made while stopped (id >
	// 400, streamed after the resync from the slot) and 9 after (id < 10).
	const updates = 100 + 100 + 9
	if ops["R"] != 1 || ops["D"] != deleted || ops["U"] != updates {
		t.Errorf("changelog ops %v: want one R (the resync), %d D (deletes while stopped) and %d U", ops, deleted, updates)
	}
}
