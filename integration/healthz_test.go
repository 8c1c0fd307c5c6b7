package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// /healthz answers 200 while the bridge copies and while it streams, and
// 503 with the reason while the replication connection is lost; /metrics
// answers during the copies at startup too. The copy is held open by a
// transaction that keeps the table sync's temporary slot from being made.
func TestHealthz(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 100) g;
		INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 100) g;
		CREATE ROLE bridge LOGIN REPLICATION PASSWORD 'bridge-pw';
		GRANT SELECT ON a, b TO bridge;
		CREATE PUBLICATION h_pub FOR TABLE a, b;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	run := append([]string{"run", "--source", pg.URL("bridge", "bridge-pw", "postgres"), "--publication", "h_pub", "--flush-interval", "1s", "--metrics-addr", addr}, tg.args()...)
	b := startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=copy-done:1"}, run...)
	b.crashed(t, time.Minute) // a copied, b not
	// A transaction with an xid: no slot can be created until it ends.
	hold := pgConn(t, pg)
	tx, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}

	b = startBridge(t, nil, run...)
	waitHealth(t, b, addr, 200, "ok: copying")
	code, metrics := httpGet(t, "http://"+addr+"/metrics", "")
	if code != 200 || !strings.Contains(metrics, "pg2iceberg_acknowledged_lsn") {
		t.Errorf("/metrics during the copy = %d\n%s", code, metrics)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, b, addr, 200, "ok: streaming: acknowledged 0/")
	if _, body := httpGet(t, "http://"+addr+"/healthz", ""); strings.Contains(body, "acknowledged 0/0,") {
		t.Errorf("/healthz shows 0/0 as acknowledged: %s", body)
	}

	// Lost, and the role may not log in again for a while.
	exec1(t, conn, `ALTER ROLE bridge NOLOGIN`)
	exec1(t, conn, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_h_pub'`)
	waitHealth(t, b, addr, 503, "unavailable: replication connection lost ")
	exec1(t, conn, `ALTER ROLE bridge LOGIN`)
	waitHealth(t, b, addr, 200, "ok: streaming")
	exec1(t, conn, `UPDATE b SET v = 'changed' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_h_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "b", "id", icegoRows(t, tg, "public.b"), pgRows(t, conn, "id::text AS id, v", "b"))
}

// waitHealth polls /healthz until it answers code with a body starting
// with prefix.
func waitHealth(t *testing.T, b *bridge, addr string, code int, prefix string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		if !b.running() {
			t.Fatalf("bridge exited (%v) waiting for /healthz %d %q; log:\n%s", b.err, code, prefix, tail(b.log(), 20))
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = resp.Status + " " + string(body)
			if resp.StatusCode == code && strings.HasPrefix(string(body), prefix) {
				t.Logf("/healthz: %s", strings.TrimSpace(last))
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("/healthz did not answer %d %q within a minute; last: %s", code, prefix, last)
}
