package integration

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// The network-fault tests put toxiproxy between the bridge and Postgres
// (or S3) and inject latency, a bandwidth limit, connection resets and a
// half-open connection while a workload streams. The bridge must survive
// each in the process, and the tables must be exact at the end.

// netSchema is reconnectSchema with a table large enough that its copy
// runs while a fault is on.
const netSchema = `CREATE TABLE a (id int PRIMARY KEY, v text);
	CREATE TABLE b (id int PRIMARY KEY, v text);
	INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 20000) g;
	CREATE PUBLICATION rc_pub FOR TABLE a, b;`

// proxiedURL is u with its host and port replaced by addr.
func proxiedURL(t *testing.T, u, addr string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Host = addr
	return p.String()
}

// pgProxy starts toxiproxy with a proxy in front of pg.
func pgProxy(t *testing.T, pg *harness.Postgres) *harness.Proxy {
	t.Helper()
	tp := harness.StartToxiproxyT(t)
	px, err := tp.Proxy("postgres", net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	return px
}

// toxic adds a toxic and returns its removal.
func toxic(t *testing.T, px *harness.Proxy, tx harness.Toxic) (remove func()) {
	t.Helper()
	if err := px.Add(tx); err != nil {
		t.Fatal(err)
	}
	t.Logf("toxic on: %s %s %v", tx.Type, tx.Stream, tx.Attributes)
	return func() {
		t.Helper()
		if err := px.Remove(tx.Name); err != nil {
			t.Fatal(err)
		}
		t.Logf("toxic off: %s %s", tx.Type, tx.Stream)
	}
}

// netLoad streams a change to each table every few milliseconds on a
// direct connection (not through the proxy) until stop, which returns
// the committed steps.
func netLoad(t *testing.T, pg *harness.Postgres) (stop func() int64) {
	var steps atomic.Int64
	end := writeLoad(t, pg, 5*time.Millisecond, func(ctx context.Context, c *pgx.Conn, i int) error {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO b VALUES ($1::int, 'b' || $1::text)`, i); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE a SET v = 'u' || $1::text WHERE id = $1::int % 100 + 1`, i)
			return err
		})
		if err == nil {
			steps.Add(1)
		}
		return err
	})
	return func() int64 { end(); return steps.Load() }
}

// waitLost waits until the bridge has survived n lost connections in all
// (pg2iceberg_errors_total{kind="replication_connection"}).
func waitLost(t *testing.T, r *reconnectRun, n int64, what string) {
	t.Helper()
	const lost = `pg2iceberg_errors_total{kind="replication_connection"}`
	deadline := time.Now().Add(90 * time.Second)
	for metricValue(t, r.addr, lost) < n {
		if !r.b.running() {
			t.Fatalf("bridge exited (%v) after %s; log:\n%s", r.b.err, what, tail(r.b.log(), 40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not notice %s within 90s (%s = %d, want %d); log:\n%s",
				what, lost, metricValue(t, r.addr, lost), n, tail(r.b.log(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNetworkFaultsPostgres runs the bridge's SQL and replication
// connections through toxiproxy: latency and a bandwidth limit during the
// copy, then while a workload streams latency with jitter, a bandwidth
// limit, connection resets and a half-open connection (the server's bytes
// vanish, no FIN, no RST). The same process survives them all.
func TestNetworkFaultsPostgres(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, netSchema)
	px := pgProxy(t, pg)
	source := proxiedURL(t, pg.SuperURL("postgres"), px.Listen)
	r := &reconnectRun{pg: pg, conn: conn, tg: localTarget(t), addr: freeAddr(t), changes: map[string]int64{}}

	// The copy runs slowed: 100 ms each way and 256 KB/s from the server.
	offLat := toxic(t, px, harness.Toxic{Name: "copy_latency", Type: "latency", Attributes: map[string]int{"latency": 100, "jitter": 50}})
	offBw := toxic(t, px, harness.Toxic{Name: "copy_bw", Type: "bandwidth", Attributes: map[string]int{"rate": 256}})
	args := append([]string{"run", "--source", source, "--publication", "rc_pub", "--flush-interval", "1s",
		"--metrics-addr", r.addr, "--receive-timeout", "6s"}, r.tg.args()...)
	r.b = startBridge(t, nil, args...)
	r.pid = r.b.cmd.Process.Pid
	waitSlot(t, conn, reconnectSlot, r.b)
	offLat()
	offBw()

	stop := netLoad(t, pg)
	for _, tx := range []harness.Toxic{
		{Name: "latency", Type: "latency", Attributes: map[string]int{"latency": 300, "jitter": 300}},
		{Name: "latency_up", Type: "latency", Stream: "upstream", Attributes: map[string]int{"latency": 100, "jitter": 100}},
		{Name: "bandwidth", Type: "bandwidth", Attributes: map[string]int{"rate": 32}},
	} {
		off := toxic(t, px, tx)
		waitFlushes(t, r, 3)
		off()
	}
	// A reset: every connection through the proxy gets an RST on its
	// next bytes, until the toxic is removed.
	off := toxic(t, px, harness.Toxic{Name: "reset", Type: "reset_peer", Attributes: map[string]int{"timeout": 0}})
	waitLost(t, r, 1, "a connection reset")
	off()
	waitFlushes(t, r, 2)

	// Half-open: the server's bytes vanish, the sockets stay open, and
	// the bridge's standby statuses still reach the server, so it never
	// times the walsender out (a peer gone without a FIN looks the same
	// to the bridge). Only silence tells the bridge; it must reconnect
	// once the path is back.
	off = toxic(t, px, harness.Toxic{Name: "halfopen", Type: "timeout", Attributes: map[string]int{"timeout": 0}})
	waitLost(t, r, 2, "a half-open connection (a silent server)")
	time.Sleep(3 * time.Second) // a reconnect attempt meets the dead path too
	off()
	waitFlushes(t, r, 2)

	steps := stop()
	r.changes["a"], r.changes["b"] = steps, steps // the copy's rows are not changes
	r.finish(t, 0, "reconnected", "the server sent nothing, not even the reply to a keepalive")
}
