package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliCase is one command line and what its output must and must not say.
type cliCase struct {
	name    string
	args    []string
	fails   bool     // a non-zero exit is wanted
	want    []string // all in the output
	notWant []string // none in the output
}

func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		out, err := runOnce(t, tc.args...)
		if tc.fails != (err != nil) {
			t.Errorf("%s: exit error %v, want failure %t; output:\n%s", tc.name, err, tc.fails, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%s: output has %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// The commands' error paths and the status branches a first-time user
// meets: before the bridge has ever run, with a slot of another plugin,
// with wrong arguments; then the same commands once the bridge has run,
// and serve's token from the flag, the environment and a file.
func TestCLIErrorPaths(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE TABLE other (id int PRIMARY KEY);
		CREATE PUBLICATION ce_pub FOR TABLE t;
		CREATE ROLE plain LOGIN PASSWORD 'plain-pw';
		INSERT INTO t SELECT g, 'v' FROM generate_series(1, 10) g;`)
	tg := localTarget(t)
	source := pg.SuperURL("postgres")
	common := append([]string{"--source", source, "--publication", "ce_pub"}, tg.args()...)
	empty := t.TempDir()
	tokenFile, emptyToken := filepath.Join(empty, "token"), filepath.Join(empty, "empty-token")
	for f, content := range map[string]string{tokenFile: "tok-file\n", emptyToken: " \n"} {
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runCLICases(t, []cliCase{
		{name: "status before the first run", args: append([]string{"status"}, common...),
			want: []string{"slot pg2iceberg_ce_pub: does not exist (the bridge has not started)", "not created yet"}},
		{name: "backfill before the first run", args: append([]string{"backfill", "--table", "public.t"}, common...),
			fails: true, want: []string{"run the bridge once first"}},
		{name: "serve without a catalog", args: []string{"serve", "--warehouse", empty, "--listen", "127.0.0.1:0"},
			fails: true, want: []string{"no catalog at", "start pg2iceberg run first"}},
		{name: "serve with a token file that is missing", args: []string{"serve", "--warehouse", empty, "--listen", "127.0.0.1:0", "--catalog-token-file", filepath.Join(empty, "nope")},
			fails: true, want: []string{"nope"}},
		{name: "setup without a source", args: []string{"setup"},
			fails: true, want: []string{"--source is required"}},
		{name: "setup as a role that is not a superuser", args: []string{"setup", "--source", pg.URL("plain", "plain-pw", "postgres")},
			fails: true, want: []string{"install the DDL capture (run as a superuser", "setup --print"}, notWant: []string{"plain-pw"}},
		{name: "setup with a wrong password", args: []string{"setup", "--source", pg.URL("plain", "wrong-pw", "postgres")},
			fails: true, want: []string{"password authentication failed"}, notWant: []string{"wrong-pw"}},
		{name: "setup --print --uninstall", args: []string{"setup", "--print", "--uninstall"},
			want: []string{"DROP EVENT TRIGGER IF EXISTS pg2iceberg_ddl;", "DROP TABLE IF EXISTS pg2iceberg.secret;"}, notWant: []string{"CREATE EVENT TRIGGER"}},
		{name: "setup --print --grant-to", args: []string{"setup", "--print", "--grant-to", "Reader"},
			want: []string{"CREATE EVENT TRIGGER", `GRANT SELECT ON pg2iceberg.secret TO "Reader";`}, notWant: []string{"<bridge role>"}},
		{name: "repair without tables", args: append([]string{"repair"}, tg.args()...),
			fails: true, want: []string{"name the tables to repair"}},
		{name: "repair --location with two tables", args: append([]string{"repair", "--location", "file:///x"}, append(tg.args(), "public.t", "public.t__changelog")...),
			fails: true, want: []string{"--location applies to one table"}},
	})

	// A slot of the bridge's name made by another output plugin.
	exec1(t, conn, `SELECT pg_create_logical_replication_slot('pg2iceberg_ce_pub', 'test_decoding')`)
	runCLICases(t, []cliCase{
		{name: "run on a slot of another plugin", args: append([]string{"run", "--flush-interval", "1s"}, common...),
			fails: true, want: []string{"test_decoding", "pg2iceberg_ce_pub"}, notWant: []string{"panic"}},
	})
	exec1(t, conn, `SELECT pg_drop_replication_slot('pg2iceberg_ce_pub')`)

	b := startBridge(t, nil, append([]string{"run", "--flush-interval", "1s"}, common...)...)
	waitSlot(t, conn, "pg2iceberg_ce_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_ce_pub", b)
	b.stop(t)
	runCLICases(t, []cliCase{
		{name: "backfill of a table not in the publication", args: append([]string{"backfill", "--table", "public.other"}, common...),
			fails: true, want: []string{"table public.other is not in publication ce_pub"}},
		{name: "backfill with two workers", args: append([]string{"backfill", "--table", "public.t", "--backfill-workers", "2"}, common...),
			want: []string{"table sync finished"}},
		{name: "repair --dry-run of a sound table", args: append([]string{"repair", "--dry-run"}, append(tg.args(), "public.t")...),
			want: []string{"public.t: the catalog already points at the newest valid metadata"}},
		{name: "serve vending keys without a token", args: append([]string{"serve", "--listen", "127.0.0.1:0", "--vend-s3-credentials"}, tg.args()...),
			fails: true, want: []string{"--vend-s3-credentials hands out S3 keys"}},
		{name: "status after the run", args: append([]string{"status"}, common...),
			want: []string{"slot pg2iceberg_ce_pub: confirmed_flush_lsn", "public.t "}, notWant: []string{"not created yet"}},
		{name: "serve with a token and a token file", args: append([]string{"serve", "--listen", "127.0.0.1:0", "--catalog-token", "tok-flag", "--catalog-token-file", tokenFile}, tg.args()...),
			fails: true, want: []string{"give --catalog-token or --catalog-token-file, not both"}, notWant: []string{"tok-flag", "tok-file"}},
		{name: "serve with an empty token file", args: append([]string{"serve", "--listen", "127.0.0.1:0", "--catalog-token-file", emptyToken}, tg.args()...),
			fails: true, want: []string{"--catalog-token-file " + emptyToken + " is empty"}},
	})
	checkServeToken(t, tg)
	compareRows(t, "iceberg-go", "public.t", "id", icegoRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "public.t"))
}

// checkServeToken requires serve to take its token from --catalog-token
// and from PG2ICEBERG_CATALOG_TOKEN: loadTable is refused without it (401)
// and served with it, and the token is not in the log.
func checkServeToken(t *testing.T, tg target) {
	t.Helper()
	for _, tc := range []struct {
		how, token string
		env, args  []string
	}{
		{how: "--catalog-token", token: "tok-from-flag", args: []string{"--catalog-token", "tok-from-flag"}},
		{how: "PG2ICEBERG_CATALOG_TOKEN", token: "tok-from-env", env: []string{"PG2ICEBERG_CATALOG_TOKEN=tok-from-env"}},
	} {
		b := startBridge(t, tc.env, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), tg.args()...)...)
		load := "http://" + listening(t, b) + "/v1/pg2iceberg/namespaces/public/tables/t"
		if code, body := httpGet(t, load, tc.token); code != 200 || !strings.Contains(body, `"metadata-location"`) {
			t.Errorf("serve, token from %s: loadTable with the token = %d %.200s, want 200 with a metadata-location", tc.how, code, body)
		}
		for _, wrong := range []string{"", "wrong-" + tc.token} {
			if code, _ := httpGet(t, load, wrong); code != 401 {
				t.Errorf("serve, token from %s: loadTable with token %q = %d, want 401", tc.how, wrong, code)
			}
		}
		b.stop(t)
		if strings.Contains(b.log(), tc.token) {
			t.Errorf("serve, token from %s: the log shows the token:\n%s", tc.how, tail(b.log(), 10))
		}
	}
}
