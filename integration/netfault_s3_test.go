package integration

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// TestNetworkFaultsS3 puts toxiproxy between the bridge and S3
// (versitygw) while a workload streams: latency, a bandwidth limit,
// connection resets, and half-open connections (for a while, and for good) on the data file and
// metadata writes of the flushes. The same process survives each, nothing
// is acknowledged that is not committed, and at the end the mirrors equal
// Postgres and the changelogs hold exactly the committed changes.
func TestNetworkFaultsS3(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, reconnectSchema)
	tg := s3Target(t)
	u, err := url.Parse(tg.s3.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tp := harness.StartToxiproxyT(t)
	px, err := tp.Proxy("s3", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	r := &reconnectRun{pg: pg, conn: conn, tg: tg, addr: freeAddr(t), changes: map[string]int64{}}
	args := []string{"run", "--source", pg.SuperURL("postgres"), "--publication", "rc_pub", "--flush-interval", "1s",
		"--metrics-addr", r.addr, "--warehouse", tg.warehouse, "--catalog", tg.catalog,
		"--s3-endpoint", "http://" + net.JoinHostPort("127.0.0.1", portOf(px.Listen)), "--s3-region", tg.s3.Region, "--s3-path-style",
		"--s3-timeout", "4s"} // long enough for the 64 KB/s step (bytes toxiproxy holds are silence to the bridge)
	var env []string
	for _, e := range tg.env() {
		if !strings.HasPrefix(e, "AWS_ENDPOINT_URL") { // the bridge goes through the proxy
			env = append(env, e)
		}
	}
	r.b = startBridge(t, env, args...)
	r.pid = r.b.cmd.Process.Pid
	waitSlot(t, conn, reconnectSlot, r.b)

	stop := netLoad(t, pg)
	for _, tx := range []harness.Toxic{
		{Name: "latency", Type: "latency", Attributes: map[string]int{"latency": 200, "jitter": 200}},
		{Name: "bandwidth", Type: "bandwidth", Stream: "upstream", Attributes: map[string]int{"rate": 64}},
	} {
		off := toxic(t, px, tx)
		waitFlushes(t, r, 3)
		off()
	}
	// Resets: every S3 connection gets an RST on its next bytes until a
	// request has failed past the SDK's own retries (a flush's, which
	// restarts the attempt in the process, or a compaction's, which is
	// dropped and tried again).
	before := strings.Count(r.b.log(), "exceeded maximum number of attempts")
	off := toxic(t, px, harness.Toxic{Name: "reset", Type: "reset_peer", Attributes: map[string]int{"timeout": 0}})
	for deadline := time.Now().Add(time.Minute); strings.Count(r.b.log(), "exceeded maximum number of attempts") == before; {
		if !r.b.running() || time.Now().After(deadline) {
			t.Fatalf("no S3 request failed within a minute of resets (running: %v); log:\n%s", r.b.running(), tail(r.b.log(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	off()
	waitFlushes(t, r, 2)
	// Half-open for 5 s: S3's bytes vanish, the sockets stay open; the
	// requests under way hang until toxiproxy closes their connections
	// as the toxic goes.
	off = toxic(t, px, harness.Toxic{Name: "halfopen", Type: "timeout", Attributes: map[string]int{"timeout": 0}})
	time.Sleep(5 * time.Second)
	off()
	waitFlushes(t, r, 2)
	// Half-open for good on about a tenth of the connections (toxiproxy
	// draws each connection's fate when the toxic is added and when the
	// connection opens): S3 gets the requests on them and its answers
	// wait an hour, and the connections stay open. (A timeout toxic would
	// not do: it closes the client's side as soon as S3 closes its own.)
	// Flushes go on meanwhile only if a request that hears nothing for
	// --s3-timeout is abandoned and tried again on another connection;
	// each stuck attempt costs the 4 s of --s3-timeout. The run ends with
	// the toxic on (the last flushes and the shutdown are under it):
	// toxiproxy 2.5.0 can hang removing it, holding the lock every new
	// connection takes (its latency stage, interrupted, hands its chunk to
	// a writer that has already gone with the closed connection), which
	// failed the test now and then with the DELETE's timeout.
	_ = toxic(t, px, harness.Toxic{Name: "stuck", Type: "latency", Toxicity: 0.1, Attributes: map[string]int{"latency": 3_600_000}})
	waitFlushesWithin(t, r, 3, 4*time.Minute)

	steps := stop()
	r.changes["a"], r.changes["b"] = steps, steps
	r.finish(t, 0)
}

// portOf is the port of a host:port address.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
