package integration

import (
	"context"
	"hash/fnv"
	"strings"
	"testing"
	"time"
)

// Two bridges started at once on the same slot and warehouse, with a table
// that still needs its copy: exactly one proceeds, the other exits before
// it writes anything, with an error naming the holder; the mirror has every
// row once. backfill --table is refused the same way while a bridge runs.
func TestTwoBridgesAtOnce(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "shop_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s"}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	b.stop(t)
	// A table the next start copies (added while the bridge was stopped).
	exec1(t, conn, `CREATE TABLE shop.later (id int PRIMARY KEY, v text);
		INSERT INTO shop.later SELECT g, 'v' || g FROM generate_series(1, 50000) g;
		ALTER PUBLICATION shop_pub ADD TABLE shop.later`)

	both := []*bridge{startBridge(t, nil, run...), startBridge(t, nil, run...)}
	var loser, winner *bridge
	deadline := time.Now().Add(3 * time.Minute)
	for loser == nil && time.Now().Before(deadline) {
		for i, x := range both {
			if !x.running() {
				loser, winner = x, both[1-i]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if loser == nil {
		t.Fatalf("both bridges still run after 3 minutes; logs:\n%s\n---\n%s", tail(both[0].log(), 20), tail(both[1].log(), 20))
	}
	if loser.err == nil {
		t.Errorf("the second bridge exited with status 0; log:\n%s", loser.log())
	}
	out := loser.log()
	t.Logf("the second bridge: %s", lastLine(out, "pg2iceberg:"))
	for _, w := range []string{`slot "pg2iceberg_shop_pub"`, "server pid ", `application_name "pg2iceberg`, "client 127.0.0.1", "connected since ", "pg_terminate_backend"} {
		if !strings.Contains(out, w) {
			t.Errorf("the second bridge's error does not mention %q:\n%s", w, tail(out, 20))
		}
	}
	for _, w := range []string{"key index", "table sync", "SQLSTATE 55006"} {
		if strings.Contains(out, w) {
			t.Errorf("the second bridge got as far as %q before it stopped:\n%s", w, tail(out, 20))
		}
	}
	waitSlot(t, conn, "pg2iceberg_shop_pub", winner)
	exec1(t, conn, `UPDATE shop.later SET v = 'u' WHERE id % 10 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", winner)

	// backfill --table takes the same lock.
	bf, err := runOnce(t, append([]string{"backfill", "--table", "shop.later"}, common...)...)
	if err == nil || !strings.Contains(bf, "server pid ") {
		t.Errorf("backfill with a bridge running: err %v, output:\n%s", err, bf)
	}
	winner.stop(t)

	want := pgRows(t, conn, `id::text AS id, v`, "shop.later")
	compareRows(t, "pyiceberg", "shop.later", "id", pyicebergRows(t, tg, "shop.later"), want)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), pgRows(t, conn, ordersSelect, ord))
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pg2iceberg_sync_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d temporary sync slots left", n)
	}
}

// The lease lives on the bridge's SQL connection: when that connection is
// lost and reopened, the bridge takes the lease again, and stops when
// another session took it in the meantime.
func TestLeaseRetakenAfterReconnect(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION lr_pub FOR TABLE t;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "lr_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_lr_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'before' WHERE id <= 5`)
	waitCaughtUp(t, conn, "pg2iceberg_lr_pub", b)

	// End the bridge's SQL session (and with it the lock), take the lock
	// here, then end its replication session so that it reconnects.
	var ended bool
	if err := conn.QueryRow(context.Background(), `SELECT bool_and(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
		WHERE application_name LIKE 'pg2iceberg pid %' AND backend_type = 'client backend'`).Scan(&ended); err != nil || !ended {
		t.Fatalf("end the bridge's SQL session: %v (ended %t)", err, ended)
	}
	thief := pgConn(t, pg)
	exec1(t, thief, `SET application_name = 'lease-taker'`)
	h := fnv.New32a()
	h.Write([]byte("pg2iceberg_lr_pub"))
	var got bool
	if err := thief.QueryRow(context.Background(), `SELECT pg_try_advisory_lock($1, $2)`, int32(0x70673269), int32(h.Sum32())).Scan(&got); err != nil || !got {
		t.Fatalf("take the lease: %v (got %t)", err, got)
	}
	exec1(t, conn, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_lr_pub'`)
	b.exited(t, time.Minute)
	if b.err == nil {
		t.Errorf("the bridge exited with status 0")
	}
	for _, w := range []string{"SQL connection lost too", `slot "pg2iceberg_lr_pub" is in use by another pg2iceberg`, `application_name "lease-taker"`} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("log lacks %q:\n%s", w, tail(b.log(), 10))
		}
	}
}
