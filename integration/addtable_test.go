package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A table added to the publication while the bridge streams, under a
// concurrent write load on it, is copied and then ends equal to Postgres.
func TestTableAddedWhileStreaming(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema+`
		CREATE TABLE shop.later (id int PRIMARY KEY, v text, n int);
		INSERT INTO shop.later SELECT g, 'v' || g, 0 FROM generate_series(1, 20000) g;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "shop_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)

	// Write load on the new table and an old one, before, during and after
	// it joins the publication.
	var steps atomic.Int64
	stop := writeLoad(t, pg, 5*time.Millisecond, func(ctx context.Context, lc *pgx.Conn, i int) error {
		defer steps.Add(1)
		for _, q := range []string{
			`UPDATE shop.later SET n = n + 1, v = 'u' || $1 WHERE id % 97 = $1 % 97`,
			`INSERT INTO shop.later VALUES (100000 + $1, 'new', 0)`,
			`DELETE FROM shop.later WHERE id = 1 + ($1 * 7) % 20000`,
			`UPDATE shop.orders SET status = 's' || $1 WHERE id = 1 + $1 % 500`,
		} {
			if _, err := lc.Exec(ctx, q, i); err != nil {
				return err
			}
		}
		return nil
	})
	waitLoadCommits(t, &steps, 20) // before it joins
	exec1(t, conn, `ALTER PUBLICATION shop_pub ADD TABLE shop.later`)
	waitLog(t, b, `msg="copy started" table=shop.later`)
	waitLoadCommits(t, &steps, 5) // during its copy, unless the copy is done first
	waitLog(t, b, `msg="copy finished" table=shop.later`)
	waitLoadCommits(t, &steps, 20) // after it
	stop()
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	b.stop(t)

	want := pgRows(t, conn, `id::text AS id, v, n::text AS n`, "shop.later")
	compareRows(t, "pyiceberg", "shop.later", "id", pyicebergRows(t, tg, "shop.later"), want)
	compareRows(t, "iceberg-go", "shop.later", "id", icegoRows(t, tg, "shop.later"), want)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), pgRows(t, conn, ordersSelect, ord))
}
