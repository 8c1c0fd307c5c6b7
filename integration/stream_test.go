package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const shopSchema = `
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY, name text NOT NULL, balance numeric(12,2), active bool,
  created timestamptz, uid uuid, avatar bytea, birthday date, prefs jsonb, note varchar(40), code char(4), big bigint, small smallint);
CREATE TABLE shop.orders (id bigint PRIMARY KEY, customer_id int, amount numeric(10,2), status text, placed timestamp);
CREATE TABLE shop.audit (msg text, at timestamptz);
CREATE TABLE shop.unpublished (id serial PRIMARY KEY, v text);
INSERT INTO shop.customers SELECT g, 'c' || g, g * 10.25, g % 2 = 0, '2024-01-01 00:00:00+00'::timestamptz + g * interval '61 minutes 1.5 seconds',
  md5(g::text)::uuid, decode(md5(g::text), 'hex'), '2000-01-01'::date + g, jsonb_build_object('g', g, 's', 'x' || g),
  'note ' || g, 'k' || (g % 100), g * 100000000000, g % 300 FROM generate_series(1, 200) g;
INSERT INTO shop.orders SELECT g, 1 + g % 200, g * 1.10, 'new', '2024-02-01 00:00:00'::timestamp + g * interval '1 minute 0.25 seconds'
  FROM generate_series(1, 500) g;
CREATE PUBLICATION shop_pub FOR TABLE shop.customers, shop.orders, shop.audit;
`

const customersSelect = `id::text AS id, name, balance::text AS balance, CASE WHEN active THEN 't' WHEN NOT active THEN 'f' END AS active,
  to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS created, uid::text AS uid,
  '\x' || encode(avatar, 'hex') AS avatar, to_char(birthday, 'YYYY-MM-DD') AS birthday, prefs::text AS prefs,
  note, code, big::text AS big, small::text AS small`

const ordersSelect = `id::text AS id, customer_id::text AS customer_id, amount::text AS amount, status,
  to_char(placed, 'YYYY-MM-DD HH24:MI:SS.US') AS placed`

// workload runs the mixed workload in steps, calling between(step) after
// each; it returns the number of committed row changes per table.
type workload struct {
	t       *testing.T
	conn    *pgx.Conn
	changes map[string]int64
}

func (w *workload) exec(table, sql string, args ...any) {
	w.changes[table] += exec1(w.t, w.conn, sql, args...)
}

func (w *workload) tx(fn func(tx pgx.Tx) map[string]int64, commit bool) {
	ctx := context.Background()
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	counts := fn(tx)
	if !commit {
		if err := tx.Rollback(ctx); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	if err := tx.Commit(ctx); err != nil {
		w.t.Fatal(err)
	}
	for k, v := range counts {
		w.changes[k] += v
	}
}

func txExec(t *testing.T, tx pgx.Tx, sql string, args ...any) int64 {
	t.Helper()
	tag, err := tx.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

const cust = "shop.customers"
const ord = "shop.orders"
const aud = "shop.audit"

func (w *workload) steps() []func() {
	t := w.t
	return []func(){
		func() {
			w.exec(cust, `INSERT INTO shop.customers SELECT g, 'c' || g, g * 0.01, true, now(), gen_random_uuid(), '\x00ff', '1999-12-31', '{"a": [1, 2]}', NULL, NULL, -g, -1
				FROM generate_series(201, 250) g`)
			w.exec(ord, `INSERT INTO shop.orders SELECT g, 1, g, 'new', '2024-03-01 12:00:00' FROM generate_series(501, 600) g`)
		},
		func() { w.exec(ord, `UPDATE shop.orders SET status = 'paid' WHERE id % 3 = 0`) },
		func() { w.exec(ord, `UPDATE shop.orders SET status = 'shipped' WHERE id % 6 = 0`) },
		func() { w.exec(ord, `UPDATE shop.orders SET amount = amount + 1 WHERE id % 6 = 0`) },
		func() { w.exec(cust, `UPDATE shop.customers SET id = id + 1000 WHERE id BETWEEN 1 AND 5`) },
		func() { w.exec(ord, `DELETE FROM shop.orders WHERE id % 10 = 0`) },
		func() {
			w.tx(func(tx pgx.Tx) map[string]int64 {
				c := txExec(t, tx, `INSERT INTO shop.customers (id, name) VALUES (300, 'multi')`)
				o := txExec(t, tx, `INSERT INTO shop.orders VALUES (1000, 300, 9.99, 'new', '2024-04-01 00:00:00')`)
				c += txExec(t, tx, `UPDATE shop.customers SET balance = 0 WHERE id = 300`)
				o += txExec(t, tx, `DELETE FROM shop.orders WHERE id = 1`)
				a := txExec(t, tx, `INSERT INTO shop.audit VALUES ('multi-table', now())`)
				return map[string]int64{cust: c, ord: o, aud: a}
			}, true)
		},
		func() {
			w.tx(func(tx pgx.Tx) map[string]int64 {
				txExec(t, tx, `INSERT INTO shop.customers (id, name) VALUES (999, 'rolled back')`)
				txExec(t, tx, `DELETE FROM shop.orders`)
				return nil
			}, false)
		},
		func() {
			w.tx(func(tx pgx.Tx) map[string]int64 {
				n := txExec(t, tx, `INSERT INTO shop.customers (id, name) VALUES (400, 'a')`)
				n += txExec(t, tx, `UPDATE shop.customers SET name = 'b' WHERE id = 400`)
				n += txExec(t, tx, `DELETE FROM shop.customers WHERE id = 400`)
				n += txExec(t, tx, `INSERT INTO shop.customers (id, name) VALUES (400, 'c')`)
				n += txExec(t, tx, `UPDATE shop.customers SET id = 401 WHERE id = 400`)
				return map[string]int64{cust: n}
			}, true)
		},
		func() {
			for i := 0; i < 5; i++ {
				w.exec(aud, `INSERT INTO shop.audit VALUES ($1, now())`, "event "+strconv.Itoa(i))
			}
		},
		func() {
			exec1(t, w.conn, `TRUNCATE shop.orders`)
			w.changes[ord]++
			w.exec(ord, `INSERT INTO shop.orders SELECT g, 2, g, 'after truncate', '2024-05-01 00:00:00' FROM generate_series(2000, 2010) g`)
		},
		func() {
			w.exec(ord, `UPDATE shop.orders SET status = 'final' WHERE id > 2005`)
			w.exec(cust, `UPDATE shop.customers SET note = 'last', balance = balance * 2 WHERE id % 7 = 0`)
		},
	}
}

// runMixed runs the whole mixed workload scenario against tg. With crash
// set (PG2ICEBERG_TEST_CRASH value) the first bridge kills itself there and
// a second one, started afterwards, must converge.
func runMixed(t *testing.T, tg target, crash string) {
	pg, conn := startSource(t, shopSchema)
	addr := freeAddr(t)
	args := runArgs(pg, "shop_pub", tg, "--metrics-addr", addr)
	env := tg.env()
	if crash != "" {
		env = append(env, "PG2ICEBERG_TEST_CRASH="+crash)
	}
	b := startBridge(t, env, args...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)

	w := &workload{t: t, conn: conn, changes: map[string]int64{}}
	steps := w.steps()
	restarted := false
	for i, step := range steps {
		step()
		// Each step in snapshots of its own: the next starts once this one is
		// committed (or the bridge died at its crash point, restarted below).
		waitCommittedOrExit(t, conn, "pg2iceberg_shop_pub", b)
		if crash != "" && !restarted && !b.running() {
			t.Logf("bridge died at step %d as arranged (%s); restarting", i+1, crash)
			b.crashed(t, time.Second)
			b = startBridge(t, tg.env(), args...)
			restarted = true
		}
	}
	if crash != "" && !restarted {
		b.crashed(t, time.Minute)
		b = startBridge(t, tg.env(), args...)
		restarted = true
	}
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	// A last change right before SIGTERM: stopping must flush it.
	w.exec(aud, `INSERT INTO shop.audit VALUES ('just before stop', now())`)
	waitReceived(t, addr, conn, b)
	b.stop(t)

	for _, tc := range []struct{ table, sel string }{{cust, customersSelect}, {ord, ordersSelect}} {
		want := pgRows(t, conn, tc.sel, tc.table)
		compareRows(t, "pyiceberg", tc.table, "id", pyicebergRows(t, tg, tc.table), want)
		compareRows(t, "iceberg-go", tc.table, "id", icegoRows(t, tg, tc.table), want)
	}
	for _, table := range []string{cust, ord, aud} {
		checkChangelog(t, tg, table, w.changes[table])
	}
	checkKeyChange(t, tg)
	checkCatalogless(t, conn, tg)
}

// checkCatalogless reads a mirror as a catalog-less reader does: DuckDB's
// iceberg_scan on the table directory, through metadata/version-hint.text,
// on local disk or S3.
func checkCatalogless(t *testing.T, conn *pgx.Conn, tg target) {
	t.Helper()
	dir := tg.warehouse + "/shop.db/orders"
	if tg.s3 == nil {
		dir = filepath.Join(mustAbs(t, tg.warehouse), "shop.db", "orders")
	}
	got := duckdbRowIn(t, tg, "SELECT count(*), sum(amount) FROM iceberg_scan(?)", dir)
	var want string
	if err := conn.QueryRow(context.Background(), `SELECT '(' || count(*) || ', Decimal(''' || sum(amount) || '''))' FROM shop.orders`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("duckdb iceberg_scan on the table directory = %s, want %s", got, want)
	} else {
		t.Logf("duckdb iceberg_scan on the table directory (version-hint.text): %s", got)
	}
}

// checkChangelog requires exactly one changelog row per committed change.
func checkChangelog(t *testing.T, tg target, table string, want int64) {
	t.Helper()
	rows := pyicebergRows(t, tg, table+"__changelog")
	seen := map[string]bool{}
	for _, r := range rows {
		id := fmt.Sprint(r["lsn"], "/", r["seq"])
		if seen[id] {
			t.Errorf("%s__changelog: change %s recorded twice", table, id)
		}
		seen[id] = true
	}
	if int64(len(rows)) != want {
		t.Errorf("%s__changelog has %d rows, want %d (one per committed change)", table, len(rows), want)
	} else {
		t.Logf("%s__changelog: %d rows, one per committed change", table, len(rows))
	}
}

// checkKeyChange checks the before/after images of a primary key update.
func checkKeyChange(t *testing.T, tg target) {
	t.Helper()
	for _, r := range pyicebergRows(t, tg, cust+"__changelog") {
		before, _ := r["before"].(map[string]any)
		after, _ := r["after"].(map[string]any)
		if r["op"] != "U" || before == nil || before["id"] != "3" {
			continue
		}
		if after["id"] != "1003" || after["name"] != "c3" || after["balance"] != "30.75" {
			t.Errorf("key-changing update of id 3: after = %v, want id 1003, name c3, balance 30.75", after)
		}
		return
	}
	t.Errorf("no changelog row for the update of id 3 to 1003")
}

// waitSlot waits until the bridge streams: its slot is active and every
// copy is done (it logs "streaming").
func waitSlot(t *testing.T, conn *pgx.Conn, slot string, b *bridge) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active", slot).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 && strings.Contains(b.log(), "msg=streaming") {
			return
		}
		if !b.running() {
			t.Fatalf("bridge exited (%v); log:\n%s", b.err, tail(b.log(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("slot %s not streaming within 3 minutes; log:\n%s", slot, tail(b.log(), 40))
}

func TestMixedWorkloadLocal(t *testing.T) {
	t.Parallel()
	runMixed(t, localTarget(t), "")
}

func TestCrashMidBatch(t *testing.T) {
	t.Parallel()
	runMixed(t, localTarget(t), "mid-batch:400")
}

func TestCrashBeforeCommit(t *testing.T) {
	t.Parallel()
	runMixed(t, localTarget(t), "before-commit:3")
}

func TestCrashAfterCommitBeforeAck(t *testing.T) {
	t.Parallel()
	runMixed(t, localTarget(t), "after-commit:4")
}

// The mixed workload with the warehouse on S3 (versitygw), crashed after a
// commit and before its acknowledgement: the commit's files and metadata
// are objects, and the restarted bridge must find the commit from the
// catalog and skip what it holds. It also stands for the workload on S3
// without a crash: the steps before and after the crash stream as usual.
func TestCrashAfterCommitBeforeAckS3(t *testing.T) {
	t.Parallel()
	runMixed(t, s3Target(t), "after-commit:4")
}
