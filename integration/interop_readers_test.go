package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	icegorest "github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// The interop suite's readers (interop_test.go): the Python scripts in
// readers/, iceberg-go through the REST catalog, and one Spark session.

// int64Of parses a canonical integer text.
func int64Of(t *testing.T, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		t.Errorf("integer %v: %v", v, err)
	}
	return n
}

func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var listenRE = regexp.MustCompile(`msg="catalog server listening" addr=(\S+)`)

// listening waits for a pg2iceberg process to log its catalog address.
func listening(t *testing.T, b *bridge) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := listenRE.FindStringSubmatch(b.log()); m != nil {
			return m[1]
		}
		if !b.running() {
			t.Fatalf("pg2iceberg exited (%v) before serving the catalog; log:\n%s", b.err, tail(b.log(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no catalog server within a minute; log:\n%s", tail(b.log(), 30))
	return ""
}

// readerTokenEnv carries the catalog token to the Python readers, so it
// is not in their arguments.
const readerTokenEnv = "PG2ICEBERG_READER_TOKEN"

// pythonReport runs a report script from readers/ with the environment
// env plus the catalog token.
func pythonReport(t *testing.T, env []string, token, script string, args ...string) (interopReport, bool) {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"readers/" + script}, args...)...)
	cmd.Env = append(slices.Clone(env), readerTokenEnv+"="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r interopReport
	if err != nil {
		t.Errorf("%s %s: %v\n%s", script, strings.Join(args, " "), err, tail(stderr.String(), 30))
		return r, false
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Errorf("%s output %.300q: %v", script, out, err)
		return r, false
	}
	return r, true
}

func icegoREST(t *testing.T, uri, token string, opts ...icegorest.Option) *icegorest.Catalog {
	t.Helper()
	cat, err := icegorest.NewCatalog(context.Background(), "pg", uri, append([]icegorest.Option{icegorest.WithOAuthToken(token)}, opts...)...)
	if err != nil {
		t.Fatalf("iceberg-go REST catalog at %s: %v", uri, err)
	}
	return cat
}

// s3Keys gives an iceberg-go REST client s3's keys as its own (catalog
// properties, which every table's file IO takes), as the test's
// environment would without leaking into the other tests' processes.
func s3Keys(s3 *harness.S3) icegorest.Option {
	return icegorest.WithAdditionalProps(icego.Properties{"s3.access-key-id": s3.AccessKey, "s3.secret-access-key": s3.SecretKey})
}

// icegoReport reads the report with iceberg-go's scanner through the REST
// catalog; the aggregates and the join are computed here from the scans,
// as an iceberg-go user would.
func icegoReport(t *testing.T, cat *icegorest.Catalog) interopReport {
	t.Helper()
	ctx := context.Background()
	var r interopReport
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				t.Fatal(err)
			}
			r.Tables = append(r.Tables, strings.Join(ident, "."))
		}
	}
	sort.Strings(r.Tables)
	load := func(name string) *table.Table {
		tb, err := cat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatalf("iceberg-go: load %s: %v", name, err)
		}
		return tb
	}
	orders, customers := load("shop.orders"), load("shop.customers")
	r.Snapshots = map[string]int64{"shop.orders": orders.CurrentSnapshot().SnapshotID, "shop.customers": customers.CurrentSnapshot().SnapshotID}
	r.Orders, r.Customers = icegoScan(t, orders), icegoScan(t, customers)
	r.Count, r.Sum = fmt.Sprint(len(r.Orders)), sumColumn(r.Orders, "amount")
	paid := icegoScan(t, orders, table.WithRowFilter(icego.EqualTo(icego.Reference("status"), "paid")))
	r.Paid = row{"count": fmt.Sprint(len(paid)), "sum": sumColumn(paid, "amount")}
	active := map[string]any{}
	for _, c := range r.Customers {
		active[fmt.Sprint(c["id"])] = c["active"]
	}
	groups := map[any][]row{}
	for _, o := range r.Orders {
		if a, ok := active[fmt.Sprint(o["customer_id"])]; ok {
			groups[a] = append(groups[a], o)
		}
	}
	for a, rows := range groups {
		r.Join = append(r.Join, row{"active": a, "count": fmt.Sprint(len(rows)), "sum": sumColumn(rows, "amount")})
	}
	r.Changes = map[string]string{}
	counts := map[string]int{}
	for _, c := range icegoScan(t, load("shop.orders__changelog"), table.WithSelectedFields("op")) {
		counts[fmt.Sprint(c["op"])]++
	}
	for op, n := range counts {
		r.Changes[op] = fmt.Sprint(n)
	}
	return r
}

// sumColumn adds canonical decimal texts exactly; nil when all are NULL.
func sumColumn(rows []row, col string) any {
	total, scale, seen := new(big.Int), -1, false
	for _, r := range rows {
		v, ok := r[col].(string)
		if !ok {
			continue
		}
		seen = true
		whole, frac, _ := strings.Cut(v, ".")
		if scale < 0 {
			scale = len(frac)
		}
		for len(frac) < scale {
			frac += "0"
		}
		n, ok := new(big.Int).SetString(whole+frac, 10)
		if !ok {
			return "unparsable " + v
		}
		total.Add(total, n)
	}
	if !seen {
		return nil
	}
	s := total.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= scale {
		s = "0" + s
	}
	if scale > 0 {
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// duckdbScript loads DuckDB's avro and iceberg extensions offline (from the
// duckdb-ext wheels scripts/setup.sh installs) and prints the first row of
// the query argv[1], its parameters being argv[2] (a path) and then
// integers. With DUCKDB_S3_ENDPOINT set it loads httpfs too and reads s3://
// paths from that endpoint (path style, plain HTTP) with the AWS_* keys.
const duckdbScript = `import sys, os, duckdb, duckdb_ext
ext = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
con = duckdb.connect(config={"extension_directory": ext, "autoinstall_known_extensions": False, "autoload_known_extensions": False})
for e in ("avro", "iceberg"):
    con.load_extension(e)
if os.environ.get("DUCKDB_S3_ENDPOINT"):
    con.load_extension("httpfs")
    con.execute("CREATE SECRET (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false)".replace("?", "'%s'") % (
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], os.environ.get("AWS_REGION", "us-east-1"), os.environ["DUCKDB_S3_ENDPOINT"]))
print(con.execute(sys.argv[1], [sys.argv[2]] + [int(a) for a in sys.argv[3:]]).fetchone())`

// duckdbRow runs query in DuckDB with dir and ints for its ? parameters
// and returns its first row as Python prints the tuple.
func duckdbRow(t *testing.T, query, dir string, ints ...int64) string {
	t.Helper()
	return duckdbRowIn(t, target{}, query, dir, ints...)
}

// duckdbRowIn is duckdbRow with DuckDB reaching tg's S3 store, if it has
// one.
func duckdbRowIn(t *testing.T, tg target, query, dir string, ints ...int64) string {
	t.Helper()
	args := []string{"-c", duckdbScript, query, dir}
	for _, n := range ints {
		args = append(args, strconv.FormatInt(n, 10))
	}
	cmd := exec.Command("python3", args...)
	if tg.s3 != nil {
		cmd.Env = append(append(os.Environ(), tg.s3.Env()...), "DUCKDB_S3_ENDPOINT="+strings.TrimPrefix(tg.s3.Endpoint, "http://"))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb %s on %s: %v\n%s", query, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// sparkTables lists namespaces and tables through the catalog.
func sparkTables(t *testing.T, s *sparkSession) []string {
	t.Helper()
	var nss []row
	if !s.do(t, map[string]string{"op": "sql", "sql": "SHOW NAMESPACES IN pg"}, &nss) {
		return nil
	}
	var out []string
	for _, ns := range nss {
		var tables []row
		if !s.do(t, map[string]string{"op": "sql", "sql": fmt.Sprintf("SHOW TABLES IN pg.%s", ns["namespace"])}, &tables) {
			return nil
		}
		for _, tb := range tables {
			out = append(out, fmt.Sprintf("%s.%s", tb["namespace"], tb["tableName"]))
		}
	}
	sort.Strings(out)
	return out
}
