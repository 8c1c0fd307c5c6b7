package integration

import (
	"path/filepath"
	"testing"
)

// The catalog can live in any PostgreSQL (a SQL catalog): here a second
// database of the source server; iceberg-go reads the tables back from it.
func TestPostgresCatalog(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	exec1(t, conn, `CREATE DATABASE lake`)
	tg := target{name: "pg-catalog", warehouse: filepath.Join(t.TempDir(), "wh"), catalog: pg.SuperURL("lake")}
	args := runArgs(pg, "shop_pub", tg)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	exec1(t, conn, `UPDATE shop.orders SET status = 'pg catalog' WHERE id % 4 = 0`)
	exec1(t, conn, `DELETE FROM shop.orders WHERE id % 9 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", ord, "id", icegoRows(t, tg, ord), pgRows(t, conn, ordersSelect, ord))
	out, err := runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "shop_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status with a Postgres catalog: %v\n%s", err, out)
	}
}
