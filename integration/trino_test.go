//go:build trino

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Trino, the fifth reader, is opt-in: its server is an 821 MB download
// (scripts/setup.sh --trino), so this file builds only with -tags trino
// (make trino).

// trinoHome is the unpacked trino-server that scripts/setup.sh --trino
// fetched, and the Java it needs.
func trinoHome(t *testing.T) (home, javaHome string) {
	t.Helper()
	home = os.Getenv("PG2ICEBERG_TRINO_HOME")
	if home == "" {
		home = filepath.Join(cacheDir(t), "trino", "server")
	}
	if _, err := os.Stat(filepath.Join(home, "bin", "launcher")); err != nil {
		t.Fatalf("no trino-server (%v): run scripts/setup.sh --trino, or set PG2ICEBERG_TRINO_HOME", err)
	}
	javaHome = os.Getenv("PG2ICEBERG_TRINO_JAVA_HOME")
	if javaHome == "" {
		javaHome = "/usr/lib/jvm/temurin-25-jdk-amd64"
	}
	return home, javaHome
}

// startTrino runs a single-node Trino whose catalog pg has the given
// properties, trusting the test CA, and returns its HTTP address once it
// answers queries.
func startTrino(t *testing.T, catalog map[string]string, ca *testCA) string {
	t.Helper()
	home, javaHome := trinoHome(t)
	etc := t.TempDir()
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var props strings.Builder
	for k, v := range catalog {
		fmt.Fprintf(&props, "%s=%s\n", k, v)
	}
	files := map[string]string{
		"node.properties": "node.environment=test\nnode.id=pg2iceberg-test\nnode.internal-address=127.0.0.1\nnode.data-dir=" + data + "\n",
		"jvm.config": strings.Join([]string{"-server", "-Xmx1G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-Djdk.attach.allowAttachSelf=true",
			"-Djavax.net.ssl.trustStore=" + ca.trustStore, "-Djavax.net.ssl.trustStoreType=PKCS12", "-Djavax.net.ssl.trustStorePassword=changeit"}, "\n") + "\n",
		"config.properties": fmt.Sprintf("coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port=%d\n"+
			"discovery.uri=http://127.0.0.1:%d\nquery.max-memory=512MB\nquery.max-memory-per-node=512MB\n", port, port),
		"log.properties":        "io.trino=WARN\n",
		"catalog/pg.properties": props.String(),
	}
	if err := os.MkdirAll(filepath.Join(etc, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out lockedBuffer
	cmd := exec.Command(filepath.Join(home, "bin", "launcher"), "run", "--etc-dir="+etc, "--data-dir="+data)
	cmd.Env = append(os.Environ(), "JAVA_HOME="+javaHome, "PATH="+filepath.Join(javaHome, "bin")+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("trino log:\n%s", tail(out.log(), 40))
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("trino exited before it started:\n%s", tail(out.log(), 40))
		default:
		}
		if trinoStarted(addr) {
			return addr
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("trino did not start within 5 minutes:\n%s", tail(out.log(), 40))
	return ""
}

// trinoStarted reports whether Trino at addr has finished starting
// (GET /v1/info says "starting": false).
func trinoStarted(addr string) bool {
	resp, err := http.Get("http://" + addr + "/v1/info")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var info struct {
		Starting *bool `json:"starting"`
	}
	return json.NewDecoder(resp.Body).Decode(&info) == nil && info.Starting != nil && !*info.Starting
}

// trinoRows runs sql through Trino's client protocol (POST /v1/statement,
// then nextUri until the end) and returns the rows with their values as
// text (NULL as nil).
func trinoRows(t *testing.T, addr, sql string) ([]row, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Trino-User", "pg2iceberg-test")
	var rows []row
	var cols []string
	for req != nil {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("trino: %w", err)
		}
		var page struct {
			NextURI string `json:"nextUri"`
			Columns []struct {
				Name string `json:"name"`
			} `json:"columns"`
			Data  [][]any `json:"data"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		err = dec.Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("trino response: %w", err)
		}
		if page.Error != nil {
			return nil, fmt.Errorf("trino: %s", page.Error.Message)
		}
		if cols == nil && page.Columns != nil {
			for _, c := range page.Columns {
				cols = append(cols, c.Name)
			}
		}
		for _, d := range page.Data {
			r := row{}
			for i, v := range d {
				if v != nil {
					v = fmt.Sprint(v)
				}
				r[cols[i]] = v
			}
			rows = append(rows, r)
		}
		req = nil
		if page.NextURI != "" {
			if req, err = http.NewRequest(http.MethodGet, page.NextURI, nil); err != nil {
				return nil, err
			}
			req.Header.Set("X-Trino-User", "pg2iceberg-test")
		}
	}
	return rows, nil
}

// Trino's iceberg connector reads the mirrors through the served REST
// catalog (TLS, OAuth2 client credentials, mount and prefix), equal to
// PostgreSQL.
func TestTrinoReadsServedCatalog(t *testing.T) {
	ca, err := sharedTestCA()
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	const clientID = "trino"
	secret := fmt.Sprintf("tr1no-%d", time.Now().UnixNano())
	conn, uri, _ := servedShop(t, ca, clientID, secret)
	start := time.Now()
	addr := startTrino(t, map[string]string{
		"connector.name":                         "iceberg",
		"iceberg.catalog.type":                   "rest",
		"iceberg.rest-catalog.uri":               uri,
		"iceberg.rest-catalog.warehouse":         "pg2iceberg",
		"iceberg.rest-catalog.security":          "OAUTH2",
		"iceberg.rest-catalog.oauth2.credential": clientID + ":" + secret,
		"iceberg.rest-catalog.oauth2.server-uri": uri + "/v1/oauth/tokens",
		"fs.native-local.enabled":                "true",
		"local.location":                         "/",
	}, ca)
	t.Logf("trino up in %.0fs", time.Since(start).Seconds())

	tables, err := trinoRows(t, addr, "SHOW TABLES FROM pg.shop")
	if err != nil {
		t.Fatalf("SHOW TABLES: %v", err)
	}
	var names []string
	for _, r := range tables {
		names = append(names, fmt.Sprint(r["Table"]))
	}
	if got, want := strings.Join(names, " "), "audit__changelog customers customers__changelog orders orders__changelog"; got != want {
		t.Errorf("trino SHOW TABLES FROM pg.shop = %s, want %s", got, want)
	}
	orders, err := trinoRows(t, addr, `SELECT CAST(id AS varchar) AS id, CAST(customer_id AS varchar) AS customer_id,
		CAST(amount AS varchar) AS amount, status, CAST(placed AS varchar) AS placed FROM pg.shop.orders`)
	if err != nil {
		t.Fatalf("trino orders: %v", err)
	}
	compareRows(t, "Trino", "shop.orders", "id", orders, pgRows(t, conn, ordersSelect, "shop.orders"))
	const custTrino = `CAST(id AS varchar) AS id, name, CAST(balance AS varchar) AS balance,
		CASE WHEN active THEN 't' WHEN NOT active THEN 'f' END AS active, CAST(uid AS varchar) AS uid,
		CAST(birthday AS varchar) AS birthday, note, code, CAST(big AS varchar) AS big, CAST(small AS varchar) AS small`
	const custPG = `id::text AS id, name, balance::text AS balance, CASE WHEN active THEN 't' WHEN NOT active THEN 'f' END AS active,
		uid::text AS uid, to_char(birthday, 'YYYY-MM-DD') AS birthday, note, code, big::text AS big, small::text AS small`
	customers, err := trinoRows(t, addr, "SELECT "+custTrino+" FROM pg.shop.customers")
	if err != nil {
		t.Fatalf("trino customers: %v", err)
	}
	compareRows(t, "Trino", "shop.customers", "id", customers, pgRows(t, conn, custPG, "shop.customers"))
	got, err := trinoRows(t, addr, "SELECT CAST(count(*) AS varchar) AS n, CAST(sum(amount) AS varchar) AS s FROM pg.shop.orders WHERE status = 'paid'")
	if err != nil {
		t.Fatalf("trino filter: %v", err)
	}
	n, s := pgCountSum(t, conn, `SELECT count(*)::text, sum(amount)::text FROM shop.orders WHERE status = 'paid'`)
	if len(got) != 1 || got[0]["n"] != n || got[0]["s"] != s {
		t.Errorf("trino count, sum WHERE status = 'paid' = %v, want %v %v", got, n, s)
	}
	t.Logf("trino read %d orders and %d customers through %s", len(orders), len(customers), uri)
}
