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
	"regexp"
	"strconv"
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

// startTrino runs a single-node Trino with the given catalogs (name →
// properties), trusting the test CA, and returns its HTTP address once it
// answers queries.
func startTrino(t *testing.T, catalogs map[string]map[string]string, ca *testCA) string {
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
	files := map[string]string{
		"node.properties": "node.environment=test\nnode.id=pg2iceberg-test\nnode.internal-address=127.0.0.1\nnode.data-dir=" + data + "\n",
		"jvm.config": strings.Join([]string{"-server", "-Xmx1G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-Djdk.attach.allowAttachSelf=true",
			"-Djavax.net.ssl.trustStore=" + ca.trustStore, "-Djavax.net.ssl.trustStoreType=PKCS12", "-Djavax.net.ssl.trustStorePassword=changeit"}, "\n") + "\n",
		"config.properties": fmt.Sprintf("coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port=%d\n"+
			"discovery.uri=http://127.0.0.1:%d\nquery.max-memory=512MB\nquery.max-memory-per-node=512MB\n", port, port),
		"log.properties": "io.trino=WARN\n",
	}
	for name, catalog := range catalogs {
		var props strings.Builder
		for k, v := range catalog {
			fmt.Fprintf(&props, "%s=%s\n", k, v)
		}
		files["catalog/"+name+".properties"] = props.String()
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
		// Started is not ready: until the node has announced itself a
		// query fails with "No nodes available to run query".
		if trinoStarted(addr) {
			if _, err := trinoRows(t, addr, "SELECT 1"); err == nil {
				return addr
			}
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
	addr := startTrino(t, map[string]map[string]string{"pg": {
		"connector.name":                         "iceberg",
		"iceberg.catalog.type":                   "rest",
		"iceberg.rest-catalog.uri":               uri,
		"iceberg.rest-catalog.warehouse":         "pg2iceberg",
		"iceberg.rest-catalog.security":          "OAUTH2",
		"iceberg.rest-catalog.oauth2.credential": clientID + ":" + secret,
		"iceberg.rest-catalog.oauth2.server-uri": uri + "/v1/oauth/tokens",
		"fs.native-local.enabled":                "true",
		"local.location":                         "/",
	}}, ca)
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

// trinoCatalog is the properties of a Trino iceberg catalog on the served
// REST catalog at uri, warehouse wh, with a bearer token.
func trinoCatalog(uri, token, wh string) map[string]string {
	return map[string]string{
		"connector.name":                    "iceberg",
		"iceberg.catalog.type":              "rest",
		"iceberg.rest-catalog.uri":          uri,
		"iceberg.rest-catalog.warehouse":    wh,
		"iceberg.rest-catalog.security":     "OAUTH2",
		"iceberg.rest-catalog.oauth2.token": token,
		"fs.native-local.enabled":           "true",
		"local.location":                    "/",
	}
}

// trinoSums is accounts_a's and accounts_b's totals read by Trino in two
// queries, through catalog cat (at the tag, when given).
func trinoSums(t *testing.T, addr, cat, tag string) (a, b int64) {
	t.Helper()
	var sums [2]int64
	for i, tbl := range cutTables {
		sql := "SELECT CAST(sum(balance) AS varchar) AS s FROM " + cat + "." + tbl
		if tag != "" {
			sql += " FOR VERSION AS OF '" + tag + "'"
		}
		rows, err := trinoRows(t, addr, sql)
		if err != nil || len(rows) != 1 {
			t.Fatalf("trino %s: %v %v", sql, rows, err)
		}
		sums[i], err = strconv.ParseInt(fmt.Sprint(rows[0]["s"]), 10, 64)
		if err != nil {
			t.Fatalf("trino %s: %v", sql, err)
		}
	}
	return sums[0], sums[1]
}

// Trino reads the consistent cut (issue 19): a catalog on warehouse
// "consistent" loads every table under the cut-<lsn> prefix /v1/config
// handed out, so its reads never break the total while money moves
// between the tables; a tag made by tag create --all reads consistently
// through the main catalog.
func TestTrinoReadsConsistentCut(t *testing.T) {
	t.Parallel()
	ca, err := sharedTestCA()
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	pg, conn := startSource(t, cutSource)
	tg := localTarget(t)
	const slot = "pg2iceberg_cut_pub"
	b := startBridge(t, nil, runArgs(pg, "cut_pub", tg)...)
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	uri, token, serve := serveCatalogWith(t, tg, "--debug")
	stop := startTransfers(t, pg.SuperURL("postgres"))
	addr := startTrino(t, map[string]map[string]string{
		"pg":  trinoCatalog(uri, token, "pg2iceberg"),
		"cut": trinoCatalog(uri, token, "consistent"),
	}, ca)
	const n = 50
	broken := 0
	for i := 1; i <= n; i++ {
		if a, b := trinoSums(t, addr, "cut", ""); a+b != cutTotal {
			t.Errorf("trino read %d of %d through warehouse consistent: %d + %d, want %d", i, n, a, b, cutTotal)
		}
		if a, b := trinoSums(t, addr, "pg", ""); a+b != cutTotal {
			broken++
		}
	}
	transfers := stop()
	if transfers < 20 {
		t.Fatalf("only %d transfers ran while reading: the test proves nothing", transfers)
	}
	loads := regexp.MustCompile(`path=/v1/cut-[0-9a-f]+/namespaces/public/tables/accounts_[ab] status=200`).FindAllString(serve.log(), -1)
	if len(loads) < 2 {
		t.Errorf("Trino loaded no table under a cut- prefix: it does not follow the prefix /v1/config hands out\n%s", tail(serve.log(), 30))
	}
	waitCaughtUp(t, conn, slot, b)
	out := cliRun(t, tg, "tag", "create", "--all", "--name", "end")
	if m := tagLineRE.FindAllStringSubmatch(out, -1); len(m) != 2 || m[0][4] != m[1][4] {
		t.Fatalf("tag create --all: %q, want both tables tagged at one LSN", out)
	}
	if a, b := trinoSums(t, addr, "pg", "end"); a+b != cutTotal {
		t.Errorf("trino FOR VERSION AS OF 'end': %d + %d, want %d", a, b, cutTotal)
	}
	t.Logf("trino: %d reads through warehouse consistent kept the total (%d table loads under a cut prefix); main broke it %d of %d times; %d transfers",
		n, len(loads), broken, n, transfers)
	b.stop(t)
}

// trinoV3 is what Trino does with a format v3 mirror whose deletes are
// deletion vectors: "reads" (every row equal to PostgreSQL) or how it
// fails. It is Trino's entry in the v3 column of docs/querying.md's
// interop table, like dvReaders for the other readers.
const trinoV3 = "error: trino: Unexpected PUFFIN file format"

// Trino reads a format v3 mirror with deletion vectors (issue 18): what it
// returns is compared with PostgreSQL and with trinoV3.
func TestTrinoReadsV3(t *testing.T) {
	t.Parallel()
	ca, err := sharedTestCA()
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	pg, conn := startSource(t, dvSource)
	tg := localTarget(t)
	dvs := streamDV(t, pg, conn, tg)
	uri, token := serveCatalog(t, tg)
	addr := startTrino(t, map[string]map[string]string{"pg": trinoCatalog(uri, token, "pg2iceberg")}, ca)
	want := pgRows(t, conn, "id::text AS id, n::text AS n, v", "ev")
	got := "reads"
	rows, err := trinoRows(t, addr, "SELECT CAST(id AS varchar) AS id, CAST(n AS varchar) AS n, v FROM pg.public.ev")
	switch {
	case err != nil:
		got = "error: " + firstLine(err.Error())
	case trinoV3 == "reads":
		if !compareRows(t, "Trino", "ev (v3, deletion vectors)", "id", rows, want) {
			got = fmt.Sprintf("wrong rows (%d, PostgreSQL %d)", len(rows), len(want))
		}
	case !sameRows(rows, want):
		got = fmt.Sprintf("wrong rows (%d, PostgreSQL %d)", len(rows), len(want))
	}
	if got != trinoV3 {
		t.Errorf("Trino on a v3 mirror with %d live deletion vectors: %s; trinoV3 says %q (update it and docs/querying.md)", dvs, got, trinoV3)
	}
	t.Logf("Trino on a v3 mirror with %d live deletion vectors: %s", dvs, got)
}
