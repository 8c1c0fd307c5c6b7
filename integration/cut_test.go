package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cutTotal is the money in accounts_a and accounts_b together, which every
// transfer keeps.
const cutTotal = 2 * 20 * 1000

var cutTables = []string{"public.accounts_a", "public.accounts_b"}

// cutSource is the two accounts tables, cutTotal between them, and their
// publication.
const cutSource = `CREATE TABLE accounts_a (id int PRIMARY KEY, balance bigint NOT NULL);
	CREATE TABLE accounts_b (id int PRIMARY KEY, balance bigint NOT NULL);
	INSERT INTO accounts_a SELECT g, 1000 FROM generate_series(1, 20) g;
	INSERT INTO accounts_b SELECT g, 1000 FROM generate_series(1, 20) g;
	CREATE PUBLICATION cut_pub FOR TABLE accounts_a, accounts_b;`

// A workload moves money between two tables, one transaction per
// transfer, while Spark reads the two sums in two separate queries: through
// a catalog session pinned to the consistent cut (warehouse "consistent")
// the total never breaks; through main it breaks at least once (so the
// test can fail). pyiceberg reads through the pinned prefix too, and
// tag create --all makes a tag Spark and pyiceberg read consistently.
func TestConsistentCut(t *testing.T) {
	t.Parallel()
	jar := sparkJar(t)
	pg, conn := startSource(t, cutSource)
	tg := localTarget(t)
	const slot = "pg2iceberg_cut_pub"
	b := startBridge(t, nil, runArgs(pg, "cut_pub", tg, "--consistent-tag")...)
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	uri, token := serveCatalog(t, tg)
	main := startSpark(t, uri, token, jar)

	stop := startTransfers(t, pg.SuperURL("postgres"))
	n := size(100, 1000)
	cuts := checkSparkReads(t, main, uri, token, jar, n)
	for i := 0; i < 3; i++ {
		got := pyicebergSums(t, uri, token, "")
		if !strings.HasPrefix(got.Prefix, "cut-") {
			t.Errorf("pyiceberg read %d: the catalog's prefix is %q, want the cut-<lsn> /v1/config hands out", i, got.Prefix)
		}
		if s := got.total(); s != cutTotal {
			t.Errorf("pyiceberg read %d through %s: total %d, want %d (%v)", i, got.Prefix, s, cutTotal, got.Sums)
		}
		cuts[got.Prefix] = true
	}
	checkDuckDBReads(t, tg, size(20, 200))
	transfers := stop()
	if transfers < 20 {
		t.Fatalf("only %d transfers ran while reading: the test proves nothing", transfers)
	}
	if len(cuts) < 3 {
		t.Errorf("the pinned sessions saw %d cuts (%v): the cut did not move with the flushes", len(cuts), cuts)
	}
	waitCaughtUp(t, conn, slot, b)
	checkTagAll(t, tg, main, uri, token)
	// At rest the tags the bridge moves are all at the last flush's cut.
	if a, bs := sparkSumsAt(t, main, "consistent"); a+bs != cutTotal {
		t.Errorf("Spark VERSION AS OF 'consistent' after the workload: %d + %d, want %d", a, bs, cutTotal)
	}
	if got := pyicebergSums(t, uri, token, "consistent"); got.total() != cutTotal {
		t.Errorf("pyiceberg at tag consistent: %v, want total %d", got.Sums, cutTotal)
	}
	if strings.Contains(b.log(), "consistent tag not moved") {
		t.Errorf("the bridge failed to move a consistent tag:\n%s", tail(b.log(), 40))
	}
	cliFails(t, tg, "the tag the bridge moves", "tag", "create", "--all", "--name", "consistent")
	b.stop(t)
}

// checkSparkReads reads the two sums n times through a new pinned session
// each time and through main; it returns the cut prefixes the pinned
// sessions saw.
func checkSparkReads(t *testing.T, main *sparkSession, uri, token, jar string, n int) map[string]bool {
	t.Helper()
	cuts := map[string]bool{}
	broken := 0
	for i := 1; i <= n; i++ {
		pinned := startSpark(t, uri, token, jar)
		pinned.open["warehouse"] = "consistent"
		a, b, ok := sparkSums(t, pinned)
		if !ok {
			t.Fatalf("pinned read %d of %d: Spark failed (see above)", i, n)
		}
		if a+b != cutTotal {
			t.Errorf("pinned read %d of %d: accounts_a %d + accounts_b %d = %d, want %d", i, n, a, b, a+b, cutTotal)
		}
		var none any
		pinned.exchange(t, map[string]string{"op": "close", "session": pinned.name}, &none)
		pinned.opened = false
		cuts[servedCut(t, uri, token)] = true
		if a, b, ok = sparkSums(t, main); !ok {
			t.Fatalf("main read %d of %d: Spark failed (see above)", i, n)
		}
		if a+b != cutTotal {
			broken++
		}
		if i%50 == 0 {
			t.Logf("read %d of %d: main broke the total %d times so far; %d cuts seen", i, n, broken, len(cuts))
		}
	}
	if broken == 0 {
		t.Errorf("reading main, the total never broke in %d reads: the workload or the flushes do not make a straddle, so the pinned reads prove nothing", n)
	}
	t.Logf("main broke the total in %d of %d reads; the pinned reads never did", broken, n)
	return cuts
}

// sparkSums reads accounts_a's and accounts_b's totals in two queries.
func sparkSums(t *testing.T, s *sparkSession) (a, b int64, ok bool) {
	t.Helper()
	var sums [2]int64
	for i, tbl := range cutTables {
		var rows []map[string]any
		if !s.do(t, map[string]string{"op": "sql", "sql": "SELECT CAST(sum(balance) AS STRING) AS s FROM pg." + tbl}, &rows) {
			return 0, 0, false
		}
		v, err := strconv.ParseInt(fmt.Sprint(rows[0]["s"]), 10, 64)
		if len(rows) != 1 || err != nil {
			t.Errorf("sum of %s: %v (%v)", tbl, rows, err)
			return 0, 0, false
		}
		sums[i] = v
	}
	return sums[0], sums[1], true
}

// sparkSumsAt is the two tables' totals at the tag ref, read by Spark.
func sparkSumsAt(t *testing.T, s *sparkSession, ref string) (a, b int64) {
	t.Helper()
	var sums [2]int64
	for i, tbl := range cutTables {
		var rows []map[string]any
		if !s.do(t, map[string]string{"op": "sql", "sql": "SELECT CAST(sum(balance) AS STRING) AS s FROM pg." + tbl + " VERSION AS OF '" + ref + "'"}, &rows) || len(rows) != 1 {
			t.Fatalf("Spark VERSION AS OF '%s' of %s: %v", ref, tbl, rows)
		}
		sums[i], _ = strconv.ParseInt(fmt.Sprint(rows[0]["s"]), 10, 64)
	}
	return sums[0], sums[1]
}

// servedCut is the prefix /v1/config hands a consistent session now.
func servedCut(t *testing.T, uri, token string) string {
	t.Helper()
	code, body := httpGet(t, uri+"/v1/config?warehouse=consistent", token)
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &cfg) != nil || !strings.HasPrefix(cfg.Overrides["prefix"], "cut-") {
		t.Fatalf("GET /v1/config?warehouse=consistent = %d %.300s; want a cut-<lsn> prefix", code, body)
	}
	return cfg.Overrides["prefix"]
}

// checkDuckDBReads has DuckDB read the two sums n times, each through a
// fresh ATTACH of warehouse "consistent" and of the default warehouse, from
// a serve of its own whose debug log shows that DuckDB follows the prefix
// /v1/config hands out (a DuckDB that ignored it would read main, and its
// sums could break).
func checkDuckDBReads(t *testing.T, tg target, n int) {
	t.Helper()
	uri, token, serve := serveCatalogWith(t, tg, "--debug")
	req, err := json.Marshal(map[string]any{"uri": uri, "token": token, "warehouses": []string{"consistent", "pg2iceberg"},
		"reads": n, "tables": cutTables, "column": "balance"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "readers/duckdb_cut.py")
	cmd.Stdin = strings.NewReader(string(req))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb_cut.py: %v\n%s\n%s", err, out, stderr.String())
	}
	reads := map[string]int{}
	broken := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Read      int              `json:"read"`
			Warehouse string           `json:"warehouse"`
			Sums      map[string]int64 `json:"sums"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Sums) != len(cutTables) {
			t.Fatalf("duckdb_cut.py printed %q (%v)", line, err)
		}
		reads[r.Warehouse]++
		total := cutSums{Sums: r.Sums}.total()
		switch {
		case r.Warehouse == "consistent" && total != cutTotal:
			t.Errorf("DuckDB read %d through warehouse consistent: %v, total %d, want %d", r.Read, r.Sums, total, cutTotal)
		case r.Warehouse != "consistent" && total != cutTotal:
			broken++
		}
	}
	if reads["consistent"] != n || reads["pg2iceberg"] != n {
		t.Fatalf("duckdb_cut.py made %v reads, want %d of each", reads, n)
	}
	// Every pinned read loads both tables under a cut-<lsn> prefix.
	loads := regexp.MustCompile(`path=/v1/cut-[0-9a-f]+/namespaces/public/tables/accounts_[ab] status=200`).FindAllString(serve.log(), -1)
	if len(loads) < 2*n {
		t.Errorf("DuckDB loaded the tables %d times under a cut- prefix, want at least %d: it does not follow the prefix /v1/config hands out\n%s",
			len(loads), 2*n, tail(serve.log(), 30))
	}
	t.Logf("DuckDB: %d pinned reads kept the total (%d table loads under a cut prefix); reading main broke it %d of %d times", n, len(loads), broken, n)
}

// startTransfers moves money between the two tables, one transaction per
// transfer, until the returned stop, which says how many ran.
func startTransfers(t *testing.T, url string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var count int
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			from, to := "accounts_a", "accounts_b"
			if rand.IntN(2) == 0 {
				from, to = to, from
			}
			sql := fmt.Sprintf(`BEGIN; UPDATE %s SET balance = balance - %[3]d WHERE id = %[4]d;
				UPDATE %[2]s SET balance = balance + %[3]d WHERE id = %[5]d; COMMIT`, from, to, 1+rand.IntN(50), 1+rand.IntN(20), 1+rand.IntN(20))
			if _, err := conn.Exec(ctx, sql); err != nil {
				if ctx.Err() == nil {
					failed = err
				}
				return
			}
			count++
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() int {
		cancel()
		wg.Wait()
		_ = conn.Close(context.Background())
		if failed != nil {
			t.Fatalf("transfer %d: %v", count+1, failed)
		}
		return count
	}
}

// cutSums is pyiceberg_cut.py's answer.
type cutSums struct {
	Prefix string           `json:"prefix"`
	Sums   map[string]int64 `json:"sums"`
}

func (c cutSums) total() int64 {
	var s int64
	for _, v := range c.Sums {
		s += v
	}
	return s
}

// pyicebergSums reads both tables' sums through one pyiceberg REST catalog
// session on warehouse "consistent" (at the tag ref, when given).
func pyicebergSums(t *testing.T, uri, token, ref string) cutSums {
	t.Helper()
	req, err := json.Marshal(map[string]any{"uri": uri, "token": token, "warehouse": "consistent", "tables": cutTables, "column": "balance", "ref": ref})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script, _ := filepath.Abs("readers/pyiceberg_cut.py")
	cmd := exec.CommandContext(ctx, "python3", script)
	cmd.Stdin = strings.NewReader(string(req))
	out, err := cmd.CombinedOutput()
	var got cutSums
	if err != nil || json.Unmarshal(out, &got) != nil {
		t.Fatalf("pyiceberg_cut.py (ref %q): %v\n%s", ref, err, out)
	}
	return got
}

var tagLineRE = regexp.MustCompile(`(?m)^(public\.accounts_[ab]): tag (\S+) at snapshot (\d+) \(lsn (\S+)\)$`)

// checkTagAll tags both tables at the newest cut with tag create --all, and
// reads the tag back with Spark and pyiceberg; bad requests fail clearly.
func checkTagAll(t *testing.T, tg target, s *sparkSession, uri, token string) {
	t.Helper()
	out := cliRun(t, tg, "tag", "create", "--all", "--name", "end")
	m := tagLineRE.FindAllStringSubmatch(out, -1)
	if len(m) != 2 || m[0][4] != m[1][4] {
		t.Fatalf("tag create --all: %q, want both tables tagged at one LSN", out)
	}
	if a, b := sparkSumsAt(t, s, "end"); a+b != cutTotal {
		t.Errorf("Spark at tag end: %d + %d, want %d", a, b, cutTotal)
	}
	if got := pyicebergSums(t, uri, token, "end"); got.total() != cutTotal {
		t.Errorf("pyiceberg at tag end: %v, want total %d", got.Sums, cutTotal)
	}
	cliFails(t, tg, `already have a ref "end"`, "tag", "create", "--all", "--name", "end")
	cliFails(t, tg, "no consistent cut at 0/1", "tag", "create", "--all", "--name", "early", "--lsn", "0/1")
	cliFails(t, tg, "not --table or --at", "tag", "create", "--all", "--name", "x", "--table", cutTables[0])
	cliFails(t, tg, "--lsn goes with --all", "tag", "create", "--name", "x", "--table", cutTables[0], "--lsn", "0/1")
}
