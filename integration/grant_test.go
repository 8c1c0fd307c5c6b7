package integration

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// needsHuman reads /status's tables that need a human, by name → problem.
func needsHuman(t *testing.T, addr string) map[string]string {
	t.Helper()
	code, body := httpGet(t, "http://"+addr+"/status", "")
	var st struct {
		NeedsHuman []struct {
			Table   string `json:"table"`
			Problem string `json:"problem"`
		} `json:"needs_human"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("/status = %d %s", code, body)
	}
	out := map[string]string{}
	for _, n := range st.NeedsHuman {
		out[n.Table] = n.Problem
	}
	return out
}

// containsAll reports the first of want that s lacks ("" for none).
func containsAll(s string, want ...string) string {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// Tables that join a FOR TABLES IN SCHEMA publication while the bridge
// streams and cannot be mirrored as they are: one without a GRANT to the
// bridge's role, one with a column type that has no Iceberg form, one
// keyed by an interval. Any role that can create a table in the schema can
// do this, so none of them may stop the stream: their changes are skipped
// with a warning each and a count, /status, /healthz and status say they
// need a human and what to run, and the other table streams on. After the
// GRANT the next change copies that table while streaming (its skipped
// changes are in the copy, not streamed into it from the middle); the other
// two are skipped at a restart too (only the first start stops at them),
// and once fixed the next start copies them.
func TestNewTableWithoutGrant(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE ROLE app LOGIN;
		CREATE ROLE bridge LOGIN REPLICATION PASSWORD 'bridge-pw';
		CREATE SCHEMA app AUTHORIZATION app;
		SET ROLE app;
		CREATE TABLE app.first (id int PRIMARY KEY, v text);
		INSERT INTO app.first VALUES (1, 'a');
		GRANT USAGE ON SCHEMA app TO bridge;
		GRANT SELECT ON app.first TO bridge;
		RESET ROLE;
		CREATE PUBLICATION app_pub FOR TABLES IN SCHEMA app;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	common := append([]string{"--source", pg.URL("bridge", "bridge-pw", "postgres"), "--publication", "app_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s", "--metrics-addr", addr}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	exec1(t, conn, `SET ROLE app`)
	exec1(t, conn, `CREATE TABLE app.later (id int PRIMARY KEY, v text)`)
	exec1(t, conn, `INSERT INTO app.later VALUES (1, 'a'), (2, 'b')`)
	exec1(t, conn, `CREATE TABLE app.shapes (id int PRIMARY KEY, p point)`)
	exec1(t, conn, `CREATE TABLE app.spans (d interval PRIMARY KEY, v text NOT NULL)`)
	exec1(t, conn, `GRANT SELECT ON app.shapes, app.spans TO bridge`)
	exec1(t, conn, `INSERT INTO app.shapes VALUES (1, '(1,2)')`)
	exec1(t, conn, `INSERT INTO app.spans VALUES ('1 day', 'x'), ('2 days', 'y')`)
	exec1(t, conn, `INSERT INTO app.first VALUES (2, 'after them')`)
	exec1(t, conn, `RESET ROLE`)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	compareRows(t, "iceberg-go", "app.first", "id", icegoRows(t, tg, "app.first"), pgRows(t, conn, "id::text AS id, v", "app.first"))
	log := b.log()
	for table, want := range map[string][]string{
		"app.later": {"role bridge cannot read app.later", `GRANT SELECT ON \"app\".\"later\" TO \"bridge\";`,
			`ALTER DEFAULT PRIVILEGES FOR ROLE \"app\" IN SCHEMA \"app\" GRANT SELECT ON TABLES TO \"bridge\";`},
		"app.shapes": {"app.shapes.p: type point has no Iceberg mapping"},
		"app.spans":  {"app.spans.d is part of the key", "interval"},
	} {
		w := lastLine(log, `msg="table cannot be mirrored: its changes are skipped until it is fixed" table=`+table+" ")
		if w == "" {
			t.Errorf("no warning that %s's changes are skipped:\n%s", table, tail(log, 20))
		} else if miss := containsAll(w, want...); miss != "" {
			t.Errorf("the warning for %s lacks %q: %s", table, miss, w)
		}
	}
	if n := metricValue(t, addr, "pg2iceberg_changes_skipped_total"); n != 5 {
		t.Errorf("pg2iceberg_changes_skipped_total = %d, want 5 (2 + 1 + 2 inserts)", n)
	}
	if n := metricValue(t, addr, "pg2iceberg_tables_need_human"); n != 3 {
		t.Errorf("pg2iceberg_tables_need_human = %d, want 3", n)
	}
	human := needsHuman(t, addr)
	if miss := containsAll(human["app.later"], `GRANT SELECT ON "app"."later" TO "bridge";`, "ALTER DEFAULT PRIVILEGES"); miss != "" || len(human) != 3 {
		t.Errorf("/status needs_human %v: want app.later, app.shapes, app.spans, app.later's with %q", human, miss)
	}
	if code, body := httpGet(t, "http://"+addr+"/healthz", ""); code != 200 || containsAll(body, "3 table(s) need a human", "app.later, app.shapes, app.spans") != "" {
		t.Errorf("/healthz = %d %q: want 200 (the other tables stream) naming the 3 tables", code, body)
	}
	out, err := runOnce(t, append([]string{"status"}, common...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	t.Logf("status:\n%s", out)
	for _, re := range []string{
		`(?m)^app\.later +NOT MIRRORED, needs a human: .*\n +role bridge cannot read app\.later\n +fix: GRANT SELECT ON "app"\."later" TO "bridge";`,
		`(?m)^app\.shapes +NOT MIRRORED, needs a human: `,
		`(?m)^app\.spans +NOT MIRRORED, needs a human: .*\n +app\.spans\.d is part of the key`,
		`(?m)^app\.first +watermark `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status output does not match %s", re)
		}
	}

	// The GRANT: the table's next change brings it in, by a copy.
	exec1(t, conn, `GRANT SELECT ON app.later TO bridge`)
	exec1(t, conn, `INSERT INTO app.later VALUES (3, 'c')`)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	compareRows(t, "iceberg-go", "app.later (copied after the GRANT)", "id", icegoRows(t, tg, "app.later"), pgRows(t, conn, "id::text AS id, v", "app.later"))
	if !strings.Contains(b.log(), `msg="table sync finished" table=app.later`) {
		t.Errorf("app.later was not copied after the GRANT:\n%s", tail(b.log(), 20))
	}
	if human := needsHuman(t, addr); len(human) != 2 || human["app.later"] != "" {
		t.Errorf("/status needs_human after the GRANT: %v, want app.shapes and app.spans", human)
	}
	b.stop(t)

	// A restart (a supervisor's, a deploy) skips them too: the operator
	// may be far away, and the other tables must stream.
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	exec1(t, conn, `INSERT INTO app.first VALUES (3, 'after the restart')`)
	exec1(t, conn, `INSERT INTO app.shapes VALUES (2, '(3,4)')`)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	compareRows(t, "iceberg-go", "app.first (after the restart)", "id", icegoRows(t, tg, "app.first"), pgRows(t, conn, "id::text AS id, v", "app.first"))
	if human := needsHuman(t, addr); len(human) != 2 || containsAll(human["app.spans"], "app.spans.d is part of the key") != "" {
		t.Errorf("/status needs_human after a restart: %v, want app.shapes and app.spans", human)
	}
	if code, body := httpGet(t, "http://"+addr+"/metrics", ""); code != 200 || containsAll(body, `pg2iceberg_table_needs_human{table="app.shapes"} 1`, `pg2iceberg_table_needs_human{table="app.spans"} 1`) != "" {
		t.Errorf("/metrics lacks the tables that need a human:\n%s", body)
	}
	b.stop(t)
	if n := strings.Count(b.log(), `msg="table cannot be mirrored: its changes are skipped until it is fixed" table=app.s`); n < 2 {
		t.Errorf("the restart warned %d times about the held tables, want at least 2:\n%s", n, tail(b.log(), 20))
	}

	// Fixed while stopped: the next start copies them.
	exec1(t, conn, `ALTER TABLE app.shapes ALTER COLUMN p TYPE text`)
	exec1(t, conn, `ALTER TABLE app.spans DROP CONSTRAINT spans_pkey, ADD PRIMARY KEY (v)`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	exec1(t, conn, `INSERT INTO app.spans VALUES ('3 days', 'z')`)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	if n := metricValue(t, addr, "pg2iceberg_tables_need_human"); n != 0 {
		t.Errorf("pg2iceberg_tables_need_human = %d after the fixes, want 0", n)
	}
	b.stop(t)
	compareRows(t, "iceberg-go", "app.shapes (copied once fixed)", "id", icegoRows(t, tg, "app.shapes"), pgRows(t, conn, "id::text AS id, p", "app.shapes"))
	compareRows(t, "iceberg-go", "app.spans (copied once fixed)", "v", icegoRows(t, tg, "app.spans"), pgRows(t, conn, "json_build_object('months', '0', 'days', extract(day FROM d)::bigint::text, 'micros', '0') AS d, v", "app.spans"))
	compareRows(t, "iceberg-go", "app.later", "id", icegoRows(t, tg, "app.later"), pgRows(t, conn, "id::text AS id, v", "app.later"))
}
