package integration

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// switchProxy forwards each new TCP connection to the server it points at
// now; point moves it, and connections already open stay where they are
// (a DNS name or a virtual IP moved to another server behaves so).
type switchProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
}

func startSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *switchProxy) point(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

func (p *switchProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		go func() {
			defer c.Close()
			s, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer s.Close()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			_, _ = io.Copy(c, s)
		}()
	}
}

// url is pg's superuser URL with the proxy's address in place of pg's.
func (p *switchProxy) url(pg *harness.Postgres) string {
	return strings.Replace(pg.SuperURL("postgres"), net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)), p.ln.Addr().String(), 1)
}

func pgAddr(pg *harness.Postgres) string { return net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)) }

// The source's address moves to another cluster while the bridge runs (a
// failover to a server that is not a physical replica, a restored backup
// behind the same name), and the replication connection is lost. The new
// cluster has a slot of the same name and a publication of the same name,
// so without a check the bridge would stream that cluster's changes into
// the mirrors. It must stop with an error naming the mismatch instead.
func TestReconnectToAnotherCluster(t *testing.T) {
	t.Parallel()
	pgA, connA := startSource(t, reconnectSchema)
	pgB, connB := startSource(t, reconnectSchema)
	// The same credentials reach B (a restored backup keeps its roles).
	exec1(t, connB, `ALTER ROLE `+pgB.SuperUser+` PASSWORD '`+pgA.SuperPassword+`'`)
	exec1(t, connB, `SELECT pg_create_logical_replication_slot('`+reconnectSlot+`', 'pgoutput')`)
	exec1(t, connB, `INSERT INTO b SELECT g, 'other cluster' FROM generate_series(1, 32) g`)

	proxy := startSwitchProxy(t, pgAddr(pgA))
	tg := localTarget(t)
	args := runArgs(pgA, "rc_pub", tg)
	args[2] = proxy.url(pgA) // --source
	b := startBridge(t, nil, args...)
	waitSlot(t, connA, reconnectSlot, b)
	exec1(t, connA, `UPDATE a SET v = 'on A' WHERE id <= 10`)
	waitCaughtUp(t, connA, reconnectSlot, b)

	proxy.point(pgAddr(pgB))
	var n int
	if err := connA.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM (`+walsenderPids+`) p`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminate the walsender on A: %d terminated, %v", n, err)
	}
	b.exited(t, 2*time.Minute)
	if b.err == nil {
		t.Fatalf("bridge exited 0 after reconnecting to another cluster; log:\n%s", tail(b.log(), 30))
	}
	if !strings.Contains(b.log(), "another PostgreSQL cluster") {
		t.Errorf("log does not name the other cluster:\n%s", tail(b.log(), 30))
	}
	// Nothing of B's reached the mirrors: they hold A's rows.
	compareRows(t, "iceberg-go", "b", "id", icegoRows(t, tg, "public.b"), pgRows(t, connA, "id::text AS id, v", "b"))
	compareRows(t, "iceberg-go", "a", "id", icegoRows(t, tg, "public.a"), pgRows(t, connA, "id::text AS id, v", "a"))
}
