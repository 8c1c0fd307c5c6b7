package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// runOnce runs the binary to completion and returns its combined output.
func runOnce(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runOnceEnv(t, nil, args...)
}

// runOnceEnv is runOnce with env added to the test's environment.
func runOnceEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Preflight failures name the problem and print the SQL that fixes it, and
// never echo the password.
func TestPreflightErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	if err := pg.Exec(ctx, `CREATE TABLE shapes (id int PRIMARY KEY, p point);
		CREATE PUBLICATION shapes_pub FOR TABLE shapes;
		CREATE ROLE app LOGIN PASSWORD 's3cret-pw';`); err != nil {
		t.Fatal(err)
	}
	wh := t.TempDir()
	cases := []struct {
		name   string
		source string
		pub    string
		want   []string
	}{
		{"missing publication", pg.SuperURL("postgres"), "nope", []string{`publication "nope" does not exist`, "CREATE PUBLICATION"}},
		{"unsupported type", pg.SuperURL("postgres"), "shapes_pub", []string{"public.shapes.p", "point"}},
		{"wrong password", pg.URL("app", "wrong-password", "postgres"), "shapes_pub", []string{"authentication failed"}},
		{"no replication privilege", pg.URL("app", "s3cret-pw", "postgres"), "shapes_pub", []string{"may not start replication", "ALTER ROLE", "REPLICATION"}},
		// libpq's TCP keywords set the connection's timeouts and are not
		// sent to the server (which refuses them as settings): the run
		// gets as far as the publication.
		{"libpq TCP keywords", pg.SuperURL("postgres") + "&keepalives=1&keepalives_idle=10&keepalives_interval=3&keepalives_count=2&tcp_user_timeout=30000",
			"nope", []string{`publication "nope" does not exist`}},
		{"bad TCP keyword", pg.SuperURL("postgres") + "&keepalives_count=many", "shapes_pub", []string{`keepalives_count="many" is not a whole number`}},
		// pgx's own keywords set the client and are not sent either.
		{"pgx keywords", pg.SuperURL("postgres") + "&statement_cache_capacity=0&default_query_exec_mode=simple_protocol",
			"nope", []string{`publication "nope" does not exist`}},
		// libpq's keywords pgx lacks: dropped where harmless, else refused
		// by name (the server would say "unrecognized configuration
		// parameter").
		{"libpq keywords pgx lacks", pg.SuperURL("postgres") + "&gssencmode=disable&fallback_application_name=psql",
			"nope", []string{`publication "nope" does not exist`}},
		{"libpq keyword refused", pg.SuperURL("postgres") + "&sslcrl=/etc/crl.pem", "shapes_pub", []string{"sslcrl is a libpq keyword", "take it out of the connection string"}},
	}
	replica := harness.StartPostgresT(t, harness.PostgresOptions{Settings: map[string]string{"wal_level": "replica"}})
	if err := replica.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR TABLE t;`); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		name   string
		source string
		pub    string
		want   []string
	}{"wal_level replica", replica.SuperURL("postgres"), "p", []string{`wal_level is "replica"`, "ALTER SYSTEM SET wal_level = logical"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runOnce(t, "run", "--source", tc.source, "--publication", tc.pub, "--warehouse", wh)
			if err == nil {
				t.Fatalf("run succeeded, want a preflight failure; output:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not mention %q:\n%s", w, out)
				}
			}
			for _, secret := range []string{"wrong-password", "s3cret-pw", pg.SuperPassword} {
				if strings.Contains(out, secret) {
					t.Errorf("output reveals a password:\n%s", out)
				}
			}
			if strings.Contains(out, "panic") {
				t.Errorf("output shows a panic:\n%s", out)
			}
		})
	}
}

// The bridge survives its replication connection being terminated, the
// status command reports slot lag and watermarks, and /metrics answers.
func TestReconnectStatusMetrics(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	addr := freeAddr(t)
	args := runArgs(pg, "shop_pub", tg, "--metrics-addr", addr)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	exec1(t, conn, `UPDATE shop.orders SET status = 'before terminate' WHERE id <= 100`)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)

	exec1(t, conn, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_shop_pub'`)
	exec1(t, conn, `UPDATE shop.orders SET status = 'after terminate' WHERE id > 400`)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	if !strings.Contains(b.log(), "reconnected") {
		t.Fatalf("bridge did not log a reconnect; log:\n%s", tail(b.log(), 20))
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"pg2iceberg_acknowledged_lsn", "pg2iceberg_lag_bytes", `pg2iceberg_table_watermark_lsn{table="shop.orders"}`, "pg2iceberg_changes_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s:\n%s", m, body)
		}
	}
	resp, err = http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Changes int64 `json:"changes_total"`
		Tables  []struct {
			Table string `json:"table"`
		} `json:"tables"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Exactly the two updates' rows: the initial copy is not a change.
	if st.Changes != 200 || len(st.Tables) != 5 {
		t.Errorf("/status = %+v, want 200 changes (100 updates before the terminate, 100 after) and 5 tables", st)
	}
	if n := metricValue(t, addr, "pg2iceberg_changes_total"); n != 200 {
		t.Errorf("pg2iceberg_changes_total = %d, want 200", n)
	}
	// The dashboard's metrics, with their values: one lost connection, the
	// key index holding every order, two flushes observed (at least: the
	// copy's), no transaction waiting, and a freshness that is set.
	for _, c := range []struct {
		name string
		want int64
	}{
		{`pg2iceberg_errors_total{kind="replication_connection"}`, 1},
		{`pg2iceberg_key_index_keys{table="shop.orders"}`, int64(len(pgRows(t, conn, "id", ord)))},
		{"pg2iceberg_replication_lag_seconds", 0},
	} {
		if n := metricValue(t, addr, c.name); n != c.want {
			t.Errorf("%s = %d, want %d", c.name, n, c.want)
		}
	}
	for _, m := range []string{"pg2iceberg_flush_duration_seconds_count", "pg2iceberg_commit_latency_seconds_bucket", "pg2iceberg_freshness_seconds", "process_resident_memory_bytes", "go_goroutines"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	if n := metricValue(t, addr, "pg2iceberg_flush_duration_seconds_count"); n < 2 {
		t.Errorf("pg2iceberg_flush_duration_seconds_count = %d, want at least the two updates' flushes", n)
	}
	acked := pglogrepl.LSN(metricValue(t, addr, "pg2iceberg_acknowledged_lsn"))
	if confirmed := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_shop_pub'"); acked != confirmed {
		t.Errorf("pg2iceberg_acknowledged_lsn = %s, the slot's confirmed_flush_lsn %s", acked, confirmed)
	}
	b.stop(t)

	want := pgRows(t, conn, ordersSelect, ord)
	compareRows(t, "pyiceberg", ord, "id", pyicebergRows(t, tg, ord), want)

	out, err := runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "shop_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, w := range []string{"slot pg2iceberg_shop_pub: confirmed_flush_lsn", "lag", "shop.orders ", "shop.orders__changelog", "watermark 0/"} {
		if !strings.Contains(out, w) {
			t.Errorf("status output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, pg.SuperPassword) {
		t.Errorf("status output reveals the password")
	}
	t.Logf("status:\n%s", out)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
