package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// lossyHop stands between the bridge and a REST catalog: it passes every
// request on, and while armed it lets a table commit (POST
// .../namespaces/<ns>/tables/<table>) reach the catalog, reads the
// catalog's 200, and closes the bridge's connection instead of answering:
// a commit whose outcome the bridge cannot know.
type lossyHop struct {
	target *url.URL
	armed  atomic.Int32 // answers still to lose
	lost   atomic.Int32 // answers lost
}

var tableCommit = regexp.MustCompile(`/namespaces/[^/]+/tables/[^/]+$`)

func (h *lossyHop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = h.target.Scheme, h.target.Host, h.target.Host, ""
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if r.Method == http.MethodPost && tableCommit.MatchString(r.URL.Path) && resp.StatusCode == http.StatusOK && h.armed.Add(-1) >= 0 {
		_, _ = io.Copy(io.Discard, resp.Body) // committed
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			h.lost.Add(1)
			conn.Close()
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// startLossyHop serves a lossyHop to catalog on loopback and returns its
// URI.
func startLossyHop(t *testing.T, catalog string) (*lossyHop, string) {
	t.Helper()
	target, err := url.Parse(catalog)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &lossyHop{target: target}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return h, "http://" + ln.Addr().String()
}

// A REST catalog commit whose answer is lost (the catalog committed, the
// connection closed before the bridge heard) is resolved by its commit id:
// the bridge reloads the table, finds its commit and goes on, with nothing
// lost and nothing committed twice. Six answers are lost over a stream of
// updates and inserts; each is logged once as found by its commit id, and
// afterwards the mirror equals Postgres and the changelog holds every
// change exactly once.
func TestRESTCommitUnknownOutcome(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE items (id int PRIMARY KEY, v text, n int);
		INSERT INTO items SELECT g, 'v' || g, g FROM generate_series(1, 100) g;
		CREATE PUBLICATION ru_pub FOR TABLE items;`)
	wh := t.TempDir() + "/wh"
	direct := target{name: "rest", warehouse: wh, catalog: startRESTFixture(t, wh)}
	hop, uri := startLossyHop(t, direct.catalog)
	tg := direct
	tg.catalog = uri
	const slot = "pg2iceberg_ru_pub"
	b := startBridge(t, nil, runArgs(pg, "ru_pub", tg)...)
	waitSlot(t, conn, slot, b)

	const lose = 6
	hop.armed.Store(lose)
	changes := 0
	for i := 0; hop.lost.Load() < lose; i++ {
		if i == 40 {
			t.Fatalf("%d commit answers lost after 40 transactions, want %d; log:\n%s", hop.lost.Load(), lose, tail(b.log(), 20))
		}
		changes += int(exec1(t, conn, fmt.Sprintf(`UPDATE items SET n = n + 1, v = 'step %d' WHERE id %% 10 = %d`, i, i%10)))
		changes += int(exec1(t, conn, fmt.Sprintf(`INSERT INTO items VALUES (%d, 'new', 0)`, 1000+i)))
		waitCaughtUp(t, conn, slot, b)
	}
	b.stop(t)
	if n := strings.Count(b.log(), "commit outcome was unknown: the catalog holds it"); n != lose {
		t.Errorf("the bridge resolved %d commits by their commit id, want %d (one per lost answer); log:\n%s", n, lose, tail(b.log(), 30))
	}

	compareRows(t, "iceberg-go via REST", "public.items", "id", icegoRows(t, direct, "public.items"), pgRows(t, conn, "id::text AS id, v, n::text AS n", "items"))
	seen := map[string]bool{}
	rows := icegoRows(t, direct, "public.items__changelog")
	for _, r := range rows {
		id := fmt.Sprint(r["lsn"], "/", r["xid"], "/", r["seq"])
		if seen[id] {
			t.Errorf("changelog holds change %s twice", id)
		}
		seen[id] = true
	}
	if len(rows) != changes {
		t.Errorf("changelog holds %d changes, want %d", len(rows), changes)
	}
}
