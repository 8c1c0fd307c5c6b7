package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	icegorest "github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// interopReport is what every reader returns for the same snapshot (see
// readers/interop.py); fields a reader cannot report stay nil.
type interopReport struct {
	Tables    []string          `json:"tables"`
	Snapshots map[string]int64  `json:"snapshots"`
	Orders    []row             `json:"orders"`
	Customers []row             `json:"customers"`
	Count     any               `json:"count"`
	Sum       any               `json:"sum"`
	Paid      row               `json:"paid"`
	Join      []row             `json:"join"`
	Changes   map[string]string `json:"changes"`
}

// interopChecks are the columns of the printed matrix, in order.
var interopChecks = []string{"list", "snapshot", "orders rows", "customers rows", "count", "sum", "filter", "join", "changelog",
	"VERSION AS OF", "TIMESTAMP AS OF", "live read", "ADD COLUMN"}

// matrix is the reader × check table the suite prints.
type matrix struct {
	readers []string
	cells   map[string]map[string]string // reader → check → ok/FAIL
	notes   map[string]string            // reader → how it read, and how long it took
}

// add registers a reader's row with a note on how it reads.
func (m *matrix) add(reader, note string) {
	if m.cells == nil {
		m.cells, m.notes = map[string]map[string]string{}, map[string]string{}
	}
	if m.cells[reader] == nil {
		m.readers = append(m.readers, reader)
		m.cells[reader] = map[string]string{}
	}
	m.notes[reader] = note
}

func (m *matrix) set(reader, check string, ok bool) {
	if m.cells[reader] == nil {
		m.add(reader, "")
	}
	if ok {
		m.cells[reader][check] = "ok"
	} else {
		m.cells[reader][check] = "FAIL"
	}
}

func (m *matrix) String() string {
	var b strings.Builder
	w := 24
	fmt.Fprintf(&b, "%-*s", w, "reader")
	for _, c := range interopChecks {
		fmt.Fprintf(&b, " | %s", c)
	}
	b.WriteString(" | how\n")
	for _, r := range m.readers {
		fmt.Fprintf(&b, "%-*s", w, r)
		for _, c := range interopChecks {
			v := m.cells[r][c]
			if v == "" {
				v = "-"
			}
			fmt.Fprintf(&b, " | %-*s", len(c), v)
		}
		fmt.Fprintf(&b, " | %s\n", m.notes[r])
	}
	return b.String()
}

// compare checks every field got reports against want and records a cell
// per check.
func (m *matrix) compare(t *testing.T, reader string, got, want interopReport, snapshots map[string]int64) {
	t.Helper()
	if got.Tables != nil {
		ok := slices.Equal(got.Tables, want.Tables)
		if !ok {
			t.Errorf("%s lists tables %v, want %v", reader, got.Tables, want.Tables)
		}
		m.set(reader, "list", ok)
	}
	if got.Snapshots != nil {
		// A reader that reports snapshots reports the mirrors' (orders and
		// customers): one it could not tell is a failure, not a pass.
		ok := true
		for _, name := range []string{"shop.orders", "shop.customers"} {
			if id, told := got.Snapshots[name]; !told || id != snapshots[name] {
				t.Errorf("%s read snapshot %d of %s (reported %t), want %d", reader, id, name, told, snapshots[name])
				ok = false
			}
		}
		m.set(reader, "snapshot", ok)
	}
	for check, ok := range reportDiffs(t, reader, got, want) {
		m.set(reader, check, ok)
	}
}

// reportDiffs compares the data fields of a report and returns check → ok.
func reportDiffs(t *testing.T, reader string, got, want interopReport) map[string]bool {
	t.Helper()
	same := func(what string, g, w any) bool {
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: %s = %v, want %v (PostgreSQL)", reader, what, g, w)
			return false
		}
		return true
	}
	return map[string]bool{
		"orders rows":    compareRows(t, reader, "shop.orders", "id", got.Orders, want.Orders),
		"customers rows": compareRows(t, reader, "shop.customers", "id", got.Customers, want.Customers),
		"count":          same("count(*) of shop.orders", got.Count, want.Count),
		"sum":            same("sum(amount) of shop.orders", got.Sum, want.Sum),
		"filter":         same("count(*), sum(amount) of shop.orders WHERE status = 'paid'", got.Paid, want.Paid),
		"join":           same("orders JOIN customers GROUP BY active", joinKey(got.Join), joinKey(want.Join)),
		"changelog":      same("orders__changelog rows per op", got.Changes, want.Changes),
	}
}

// joinKey renders join groups in a fixed order (engines sort NULL
// differently).
func joinKey(groups []row) string {
	var out []string
	for _, g := range groups {
		out = append(out, fmt.Sprintf("%v:%v/%v", g["active"], g["count"], g["sum"]))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// interopWorkload updates and deletes rows of both mirrored tables over
// several flushes, so the mirrors carry position deletes from several
// snapshots (checked by checkDeletesFromSnapshots). It returns the
// changelog rows per op it caused in orders.
func interopWorkload(t *testing.T, conn *pgx.Conn, slot string, b *bridge) map[string]string {
	changes := map[string]int64{}
	steps := []struct{ op, sql string }{
		{"U", `UPDATE shop.orders SET status = 'paid' WHERE id % 3 = 0`},
		{"D", `DELETE FROM shop.orders WHERE id % 7 = 0`},
		{"U", `UPDATE shop.orders SET amount = amount + 0.50, status = 'shipped' WHERE id % 5 = 0 AND status = 'new'`},
		{"I", `INSERT INTO shop.orders SELECT g, 1 + g % 210, g * 0.75, 'paid', '2024-03-01 12:00:00'::timestamp + g * interval '1.5 seconds' FROM generate_series(501, 560) g`},
		{"U", `UPDATE shop.orders SET id = id + 10000 WHERE id BETWEEN 1 AND 3`},
		{"", `UPDATE shop.customers SET active = NOT active, balance = balance + 1 WHERE id % 4 = 0`},
		{"", `DELETE FROM shop.customers WHERE id % 25 = 0`},
		{"", `UPDATE shop.customers SET active = NULL, note = 'reset' WHERE id % 33 = 0`},
		{"D", `DELETE FROM shop.orders WHERE id BETWEEN 520 AND 525`},
	}
	for i, s := range steps {
		n := exec1(t, conn, s.sql)
		if s.op != "" {
			changes[s.op] += n
		}
		if i%2 == 1 {
			waitCaughtUp(t, conn, slot, b) // committed: the next steps go in later snapshots
		}
	}
	out := map[string]string{}
	for op, n := range changes {
		out[op] = fmt.Sprint(n)
	}
	return out
}

// checkDeletesFromSnapshots fails the test unless the orders mirror's
// current snapshot holds position deletes written by at least three
// snapshots (distinct sequence numbers), as interopWorkload means it to: the
// readers are then proven on deletes from several snapshots.
func checkDeletesFromSnapshots(t *testing.T, tg target) {
	t.Helper()
	fsys, manifests := currentManifests(t, icegoTable(t, tg, "shop.orders"))
	seqs := map[int64]bool{}
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			if e.DataFile().ContentType() == icego.EntryContentPosDeletes {
				seqs[e.SequenceNum()] = true
			}
		}
	}
	if len(seqs) < 3 {
		t.Fatalf("shop.orders holds position deletes from %d snapshots (sequence numbers %v), want at least 3", len(seqs), seqs)
	}
}

// postgresReport is the report of the source: what every reader must say.
func postgresReport(t *testing.T, conn *pgx.Conn) interopReport {
	t.Helper()
	r := interopReport{
		Tables:    []string{"shop.audit__changelog", "shop.customers", "shop.customers__changelog", "shop.orders", "shop.orders__changelog"},
		Orders:    pgRows(t, conn, ordersSelect, "shop.orders"),
		Customers: pgRows(t, conn, customersSelect, "shop.customers"),
	}
	r.Count, r.Sum = pgCountSum(t, conn, `SELECT count(*)::text, sum(amount)::text FROM shop.orders`)
	c, s := pgCountSum(t, conn, `SELECT count(*)::text, sum(amount)::text FROM shop.orders WHERE status = 'paid'`)
	r.Paid = row{"count": c, "sum": s}
	r.Join = pgRows(t, conn, `CASE WHEN c.active THEN 't' WHEN NOT c.active THEN 'f' END AS active, count(*)::text AS count, sum(o.amount)::text AS sum`,
		`shop.orders o JOIN shop.customers c ON o.customer_id = c.id GROUP BY c.active`)
	return r
}

func pgCountSum(t *testing.T, conn *pgx.Conn, sql string) (any, any) {
	t.Helper()
	var count string
	var sum *string
	if err := conn.QueryRow(context.Background(), sql).Scan(&count, &sum); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if sum == nil {
		return count, nil
	}
	return count, *sum
}

// Readers nobody here wrote read the same snapshot of mirror tables with
// position deletes through `pg2iceberg serve` (and the SQL catalog file),
// and return what PostgreSQL returns. Then Spark reads while `run` keeps
// committing, and travels back in time.
func TestInterop(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	jar := sparkJar(t)
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	const slot = "pg2iceberg_shop_pub"
	bridgeArgs := runArgs(pg, "shop_pub", tg)
	b := startBridge(t, nil, bridgeArgs...)
	waitSlot(t, conn, slot, b)

	// The catalog exists now: serve it, and let Spark start up while the
	// workload runs.
	token := "interop-" + fmt.Sprint(time.Now().UnixNano())
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := startBridge(t, nil, "serve", "--warehouse", tg.warehouse, "--catalog", tg.catalog, "--listen", "127.0.0.1:0", "--catalog-token-file", tokenFile)
	uri := "http://" + listening(t, serve)
	spark := startSpark(t, uri, token, jar)

	changes := interopWorkload(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	checkDeletesFromSnapshots(t, tg)
	phaseA := time.Now()
	want := postgresReport(t, conn)
	want.Changes = changes
	t.Logf("workload done in %v: %d orders, %d customers, changelog %v", time.Since(began).Round(time.Second), len(want.Orders), len(want.Customers), changes)

	// The snapshots every reader must read: the bridge is stopped.
	restCat := icegoREST(t, uri, token)
	snapA := map[string]int64{}
	for _, name := range []string{"shop.orders", "shop.customers", "shop.orders__changelog"} {
		tb, err := restCat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatalf("load %s through the REST catalog: %v", name, err)
		}
		snapA[name] = tb.CurrentSnapshot().SnapshotID
	}
	checkAuth(t, uri, token, tg.warehouse)

	var m matrix
	timed := func(reader, how string, read func() (interopReport, bool)) {
		m.add(reader, how)
		start := time.Now()
		got, ok := read()
		m.add(reader, fmt.Sprintf("%s, %.1fs", how, time.Since(start).Seconds()))
		if ok {
			m.compare(t, reader, got, want, snapA)
		} else {
			m.set(reader, "orders rows", false)
		}
	}
	timed("pyiceberg (REST)", "RestCatalog", func() (interopReport, bool) {
		return pythonReport(t, os.Environ(), token, "pyiceberg_report.py", "--rest-uri", uri, "--token-env", readerTokenEnv)
	})
	timed("pyiceberg (SQL catalog)", "SqlCatalog on catalog.db", func() (interopReport, bool) {
		return pythonReport(t, os.Environ(), "", "pyiceberg_report.py", "--sql-uri", "sqlite:///"+mustAbs(t, tg.catalog), "--warehouse", "file://"+mustAbs(t, tg.warehouse))
	})
	timed("iceberg-go (REST)", "catalog/rest + Scan", func() (interopReport, bool) {
		return icegoReport(t, restCat), true
	})
	timed("DuckDB (REST)", "ATTACH ... (TYPE iceberg)", func() (interopReport, bool) {
		return pythonReport(t, os.Environ(), token, "duckdb_report.py", "--rest-uri", uri, "--token-env", readerTokenEnv)
	})
	timed("DuckDB (metadata file)", "iceberg_scan(metadata-location)", func() (interopReport, bool) {
		var args []string
		for _, name := range []string{"shop.orders", "shop.customers", "shop.orders__changelog"} {
			tb, err := restCat.LoadTable(ctx, strings.Split(name, "."))
			if err != nil {
				t.Fatal(err)
			}
			args = append(args, "--metadata", name+"="+strings.TrimPrefix(tb.MetadataLocation(), "file://"))
		}
		return pythonReport(t, os.Environ(), "", "duckdb_report.py", args...)
	})
	timed("Spark SQL (REST)", "pyspark "+sparkVersion+", local[1]", func() (interopReport, bool) {
		spark.wait(t)
		var got interopReport
		if !spark.do(t, map[string]string{"op": "report", "orders": "pg.shop.orders", "customers": "pg.shop.customers", "changelog": "pg.shop.orders__changelog"}, &got) {
			return got, false
		}
		got.Tables = sparkTables(t, spark)
		got.Snapshots = map[string]int64{}
		for _, name := range []string{"shop.orders", "shop.customers"} {
			var refs []row
			if spark.do(t, map[string]string{"op": "sql", "sql": "SELECT snapshot_id FROM pg." + name + ".refs WHERE name = 'main'"}, &refs) && len(refs) == 1 {
				got.Snapshots[name] = int64Of(t, refs[0]["snapshot_id"])
			}
		}
		return got, true
	})

	// Spark reads while run commits: the bridge streams again, a writer
	// keeps inserting orders.
	sparkLiveRead(t, &m, spark, pg, conn, bridgeArgs, tokenFile, snapA["shop.orders"], want)

	// Time travel to the snapshots every reader read.
	const sr = "Spark SQL (REST)"
	var got interopReport
	ok := spark.do(t, map[string]string{"op": "report",
		"orders":    fmt.Sprintf("pg.shop.orders VERSION AS OF %d", snapA["shop.orders"]),
		"customers": fmt.Sprintf("pg.shop.customers VERSION AS OF %d", snapA["shop.customers"]),
		"changelog": fmt.Sprintf("pg.shop.orders__changelog VERSION AS OF %d", snapA["shop.orders__changelog"])}, &got)
	m.set(sr, "VERSION AS OF", ok && allTrue(reportDiffs(t, sr+" VERSION AS OF", got, want)))
	ts := phaseA.UTC().Format("2006-01-02 15:04:05.000")
	got = interopReport{}
	ok = spark.do(t, map[string]string{"op": "report",
		"orders":    fmt.Sprintf("pg.shop.orders TIMESTAMP AS OF '%s'", ts),
		"customers": fmt.Sprintf("pg.shop.customers TIMESTAMP AS OF '%s'", ts),
		"changelog": fmt.Sprintf("pg.shop.orders__changelog TIMESTAMP AS OF '%s'", ts)}, &got)
	m.set(sr, "TIMESTAMP AS OF", ok && allTrue(reportDiffs(t, sr+" TIMESTAMP AS OF", got, want)))

	writeReport(t, fmt.Sprintf("interop, local warehouse: %d orders / %d customers after updates and deletes, token required, Spark session up in %.0fs, total %.0fs",
		len(want.Orders), len(want.Customers), spark.upAfter.Seconds(), time.Since(began).Seconds()), &m)
}

// Through the REST catalog, readers reach an S3 warehouse (versitygw) with
// the storage settings the catalog hands out with each table (endpoint,
// region, path style): with their own keys, or with none when the server
// vends its keys (--vend-s3-credentials).
func TestInteropS3(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	pg, conn := startSource(t, shopSchema)
	tg := s3Target(t)
	const slot = "pg2iceberg_shop_pub"
	b := startBridge(t, tg.env(), runArgs(pg, "shop_pub", tg)...)
	waitSlot(t, conn, slot, b)
	changes := interopWorkload(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	checkDeletesFromSnapshots(t, tg)
	want := postgresReport(t, conn)
	want.Changes = changes

	token := "interop-s3-" + fmt.Sprint(time.Now().UnixNano())
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	serveArgs := append([]string{"serve", "--listen", "127.0.0.1:0", "--catalog-token-file", tokenFile}, tg.args()...)
	own := "http://" + listening(t, startBridge(t, tg.env(), serveArgs...))
	vend := "http://" + listening(t, startBridge(t, tg.env(), append(serveArgs, "--vend-s3-credentials")...))

	// The readers get keys at most: endpoint, region and addressing style
	// must come from the catalog.
	var noKeys []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			noKeys = append(noKeys, kv)
		}
	}
	withKeys := append(slices.Clone(noKeys), "AWS_ACCESS_KEY_ID="+tg.s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+tg.s3.SecretKey)
	restCat := icegoREST(t, own, token, s3Keys(tg.s3))
	snap := map[string]int64{}
	for _, name := range []string{"shop.orders", "shop.customers"} {
		tb, err := restCat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatalf("load %s through the REST catalog: %v", name, err)
		}
		snap[name] = tb.CurrentSnapshot().SnapshotID
	}
	if code, body := httpGet(t, own+"/v1/pg2iceberg/namespaces/shop/tables/orders", token); code != 200 || strings.Contains(body, "secret-access-key") || !strings.Contains(body, `"s3.endpoint":"`+tg.s3.Endpoint+`"`) {
		t.Errorf("loadTable without vending = %d %.300s, want the endpoint and no secret", code, body)
	}

	var m matrix
	read := func(reader, how string, fn func() (interopReport, bool)) {
		m.add(reader, how)
		start := time.Now()
		got, ok := fn()
		m.add(reader, fmt.Sprintf("%s, %.1fs", how, time.Since(start).Seconds()))
		if ok {
			m.compare(t, reader, got, want, snap)
		} else {
			m.set(reader, "orders rows", false)
		}
	}
	read("pyiceberg (REST)", "own keys, endpoint from the catalog", func() (interopReport, bool) {
		return pythonReport(t, withKeys, token, "pyiceberg_report.py", "--rest-uri", own, "--token-env", readerTokenEnv)
	})
	read("iceberg-go (REST)", "own keys, endpoint from the catalog", func() (interopReport, bool) {
		return icegoReport(t, restCat), true
	})
	read("pyiceberg (REST, vended)", "no keys: --vend-s3-credentials", func() (interopReport, bool) {
		return pythonReport(t, noKeys, token, "pyiceberg_report.py", "--rest-uri", vend, "--token-env", readerTokenEnv)
	})
	checkRepair(t, tg, restCat)
	writeReport(t, fmt.Sprintf("interop, S3 warehouse (versitygw): %d orders / %d customers, total %.0fs",
		len(want.Orders), len(want.Customers), time.Since(began).Seconds()), &m)
}

// checkRepair drops shop.orders' catalog entry behind the bridge's back;
// pg2iceberg repair must find the newest metadata file in the warehouse
// again.
func checkRepair(t *testing.T, tg target, cat *icegorest.Catalog) {
	t.Helper()
	ctx := context.Background()
	ident := table.Identifier{"shop", "orders"}
	before, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", tg.catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM iceberg_tables WHERE table_namespace = 'shop' AND table_name = 'orders'`); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(ctx, ident); err == nil {
		t.Fatalf("shop.orders still loads after its catalog entry was deleted")
	}
	args := append(append([]string{"repair"}, tg.args()...), "shop.orders")
	out, err := runOnceEnv(t, tg.env(), args...)
	if err != nil || !strings.Contains(out, "the catalog now points at "+before.MetadataLocation()) {
		t.Fatalf("pg2iceberg repair = %v:\n%s\nwant it to point shop.orders at %s", err, out, before.MetadataLocation())
	}
	after, err := cat.LoadTable(ctx, ident)
	if err != nil || after.MetadataLocation() != before.MetadataLocation() {
		t.Fatalf("after repair shop.orders loads %v, %v; want %s", after, err, before.MetadataLocation())
	}
	t.Logf("repair on S3: %s", strings.TrimSpace(out))
}

// writeReport logs the matrix and appends it to $PG2ICEBERG_INTEROP_REPORT
// (make test prints that file at the end).
func writeReport(t *testing.T, title string, m *matrix) {
	t.Helper()
	report := title + "\n" + m.String() + "\n"
	t.Log("\n" + report)
	p := os.Getenv("PG2ICEBERG_INTEROP_REPORT")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(report)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Errorf("write the interop report: %v", err)
	}
}

func allTrue(m map[string]bool) bool {
	for _, ok := range m {
		if !ok {
			return false
		}
	}
	return true
}

// sparkLiveRead restarts the bridge (with run --serve-catalog), keeps
// inserting orders, and requires Spark to read a newer snapshot while
// commits go on, then the newest one, equal to PostgreSQL, and the table
// after a column is added at the source.
func sparkLiveRead(t *testing.T, m *matrix, spark *sparkSession, pg *harness.Postgres, conn *pgx.Conn, bridgeArgs []string, tokenFile string, snapA int64, want interopReport) {
	t.Helper()
	ctx := context.Background()
	const reader = "Spark SQL (REST)"
	args := append(slices.Clone(bridgeArgs), "--serve-catalog", "127.0.0.1:0", "--catalog-token-file", tokenFile)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	checkRunCatalog(t, b, tokenFile)

	writer, err := pg.Conn(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := 20000; ; id++ {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			if _, err := writer.Exec(ctx, `INSERT INTO shop.orders VALUES ($1, 7, 1.25, 'live', '2024-06-01 00:00:00')`, id); err != nil {
				t.Errorf("live insert: %v", err)
				return
			}
		}
	}()
	read := func() (int64, int64, bool) {
		var refs, counts []row
		if !spark.do(t, map[string]string{"op": "sql", "sql": "SELECT snapshot_id FROM pg.shop.orders.refs WHERE name = 'main'"}, &refs) || len(refs) != 1 {
			return 0, 0, false
		}
		snap := int64Of(t, refs[0]["snapshot_id"])
		if !spark.do(t, map[string]string{"op": "sql", "sql": fmt.Sprintf("SELECT count(*) AS n FROM pg.shop.orders VERSION AS OF %d", snap)}, &counts) || len(counts) != 1 {
			return 0, 0, false
		}
		return snap, int64Of(t, counts[0]["n"]), true
	}
	// Wait for the first commit after the restart, then read mid-stream.
	deadline := time.Now().Add(time.Minute)
	var snap1, n1 int64
	ok := false
	for time.Now().Before(deadline) {
		if snap1, n1, ok = read(); !ok || snap1 != snapA {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	countA := int64(len(want.Orders))
	if !ok || snap1 == snapA || n1 <= countA {
		t.Errorf("Spark while run commits: snapshot %d with %d orders (ok %t), want a snapshot newer than %d with more than %d", snap1, n1, ok, snapA, countA)
		ok = false
	}
	// More commits: wait until the source holds a row the first read's
	// snapshot cannot have, so that the second read must be newer.
	for deadline := time.Now().Add(time.Minute); ; {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM shop.orders`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > n1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live writer committed no order past the %d of the first read in a minute", n1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	snap2, n2, ok2 := read()
	var all []row
	ok2 = ok2 && spark.do(t, map[string]string{"op": "sql", "sql": "SELECT * FROM pg.shop.orders"}, &all)
	wantNow := pgRows(t, conn, ordersSelect, "shop.orders")
	if !ok2 || snap2 == snap1 || n2 <= n1 || n2 != int64(len(wantNow)) {
		t.Errorf("Spark second read: snapshot %d with %d orders (ok %t), want newer than %d (%d orders) with %d", snap2, n2, ok2, snap1, n1, len(wantNow))
		ok2 = false
	}
	ok2 = compareRows(t, reader+" live", "shop.orders", "id", all, wantNow) && ok2
	t.Logf("Spark read %d orders at snapshot %d while run committed, then %d at %d", n1, snap1, n2, snap2)
	m.set(reader, "live read", ok && ok2)

	// Schema evolution: a column added at the source, then filled in by
	// updates (position deletes on the evolved table).
	exec1(t, conn, `ALTER TABLE shop.orders ADD COLUMN note text`)
	exec1(t, conn, `UPDATE shop.orders SET note = 'note ' || id WHERE id % 11 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	var evolved []row
	ok3 := spark.do(t, map[string]string{"op": "sql", "sql": "SELECT * FROM pg.shop.orders"}, &evolved)
	ok3 = ok3 && compareRows(t, reader+" after ADD COLUMN", "shop.orders", "id", evolved, pgRows(t, conn, ordersSelect+", note", "shop.orders"))
	m.set(reader, "ADD COLUMN", ok3)
	b.stop(t)
}

// checkRunCatalog requires run --serve-catalog to serve the warehouse
// with the token, and refuse without it.
func checkRunCatalog(t *testing.T, b *bridge, tokenFile string) {
	t.Helper()
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + listening(t, b) + "/v1/pg2iceberg/namespaces/shop/tables/orders"
	if code, body := httpGet(t, base, strings.TrimSpace(string(tok))); code != 200 || !strings.Contains(body, `"metadata-location"`) {
		t.Errorf("run --serve-catalog: load shop.orders = %d %.200s, want 200 with a metadata-location", code, body)
	}
	if code, _ := httpGet(t, base, ""); code != 401 {
		t.Errorf("run --serve-catalog without a token = %d, want 401", code)
	}
}

// checkAuth requires 401 and no metadata for requests without the token.
func checkAuth(t *testing.T, uri, token, warehouse string) {
	t.Helper()
	for _, p := range []string{"/v1/config", "/v1/pg2iceberg/namespaces", "/v1/pg2iceberg/namespaces/shop/tables", "/v1/pg2iceberg/namespaces/shop/tables/orders"} {
		for _, auth := range []string{"", "wrong-" + token} {
			code, body := httpGet(t, uri+p, auth)
			if code != 401 {
				t.Errorf("GET %s with token %q = %d, want 401", p, auth, code)
			}
			for _, leak := range []string{"shop", "orders", "metadata", warehouse} {
				if strings.Contains(body, leak) {
					t.Errorf("GET %s without the token leaks %q: %s", p, leak, body)
				}
			}
		}
	}
	if code, _ := httpGet(t, uri+"/v1/pg2iceberg/namespaces/shop/tables/orders", token); code != 200 {
		t.Errorf("GET loadTable with the token = %d, want 200", code)
	}
	t.Logf("auth: requests without the token or with a wrong one get 401 and no metadata")
}
