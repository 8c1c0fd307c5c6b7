package integration

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// composeFile is what the test reads of docker-compose.yml.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	dir string // the file's directory: relative paths start there
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
}

func loadCompose(t *testing.T, path string) *composeFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &composeFile{dir: filepath.Dir(mustAbs(t, path))}
	if err := yaml.Unmarshal(data, c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func (c *composeFile) service(t *testing.T, name string) composeService {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}

// hostPath is the file on this machine that the service sees at the
// container path p, through one of its bind mounts.
func (c *composeFile) hostPath(t *testing.T, s composeService, p string) string {
	t.Helper()
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], ".") {
			continue // a named volume
		}
		if rel, ok := strings.CutPrefix(p, parts[1]); ok && (rel == "" || rel[0] == '/') {
			return filepath.Join(c.dir, parts[0], rel)
		}
	}
	t.Fatalf("no bind mount of the service holds %s (volumes %v)", p, s.Volumes)
	return ""
}

// initScripts are the host files the service mounts into
// /docker-entrypoint-initdb.d, in the order the postgres image runs them.
func (c *composeFile) initScripts(t *testing.T, s composeService) []string {
	t.Helper()
	const dir = "/docker-entrypoint-initdb.d/"
	var names []string
	for _, v := range s.Volumes {
		if parts := strings.Split(v, ":"); len(parts) >= 2 && strings.HasPrefix(parts[1], dir) {
			names = append(names, parts[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("the service mounts no init script into %s (volumes %v)", dir, s.Volumes)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = c.hostPath(t, s, n)
	}
	return out
}

// rewrite maps a compose value that names another service, a container
// address or a secret to what stands for it in the test: harness servers,
// loopback addresses with free ports, the secret's file.
type rewrite struct {
	c    *composeFile
	subs []string // old, new pairs for strings.NewReplacer
}

func (r rewrite) env(t *testing.T, env map[string]string, set map[string]string) []string {
	t.Helper()
	rep := strings.NewReplacer(r.subs...)
	var out []string
	for k, v := range env {
		if nv, ok := set[k]; ok {
			v = nv
		} else if name, ok := strings.CutPrefix(v, "/run/secrets/"); ok {
			sec, ok := r.c.Secrets[name]
			if !ok {
				t.Fatalf("%s=%s: no top-level secret %q", k, v, name)
			}
			v = filepath.Join(r.c.dir, sec.File)
		} else {
			v = rep.Replace(v)
		}
		if strings.Contains(v, "0.0.0.0:") {
			// A container listens on every address; here only loopback,
			// on a free port the log names.
			v = "127.0.0.1:0"
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// The compose stack's pipeline, run here without Docker: PostgreSQL set up
// by the init scripts as the postgres image's entrypoint runs them,
// the pg2iceberg service's exact command and environment (S3 warehouse,
// Postgres SQL catalog, served REST catalog with the token secret), and the
// load service's script. The mirrors read back through the served catalog
// equal PostgreSQL, and every insert of the load is in the changelog.
func TestComposePipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := loadCompose(t, "../docker-compose.yml")
	pgSvc, bridgeSvc, loadSvc := c.service(t, "postgres"), c.service(t, "pg2iceberg"), c.service(t, "load")
	if !slices.Contains(pgSvc.Command, "wal_level=logical") {
		t.Fatalf("the postgres service does not set wal_level=logical: %v", pgSvc.Command)
	}

	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	db := pgSvc.Environment["POSTGRES_DB"]
	if err := pg.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	pgEnv := []string{"PGHOST=" + pg.Host, fmt.Sprint("PGPORT=", pg.Port), "PGUSER=" + pg.SuperUser, "PGPASSWORD=" + pg.SuperPassword, "PGDATABASE=" + db}
	// The image's entrypoint runs the init scripts in name order, each with
	// psql -f as the superuser on POSTGRES_DB.
	inits := c.initScripts(t, pgSvc)
	for _, f := range inits {
		runScript(t, pgEnv, filepath.Join(pg.BinDir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", f)
	}

	s3 := harness.StartS3T(t)
	wh, err := url.Parse(bridgeSvc.Environment["PG2ICEBERG_WAREHOUSE"])
	if err != nil || wh.Scheme != "s3" {
		t.Fatalf("the pg2iceberg service's warehouse %q is not s3://...", bridgeSvc.Environment["PG2ICEBERG_WAREHOUSE"])
	}
	if err := s3.CreateBucket(ctx, wh.Host); err != nil {
		t.Fatal(err)
	}
	pgAddr := fmt.Sprintf("%s:%d", pg.Host, pg.Port)
	rw := rewrite{c: c, subs: []string{"@postgres:5432/", "@" + pgAddr + "/", "http://minio:9000", s3.Endpoint}}
	set := map[string]string{}
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	env := rw.env(t, bridgeSvc.Environment, set)
	var shown []string // the environment, without its secrets
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !strings.Contains(k, "SECRET") && !strings.Contains(k, "PASSWORD") {
			shown = append(shown, kv)
		}
	}
	t.Logf("pg2iceberg %s with\n  %s", strings.Join(bridgeSvc.Command, " "), strings.Join(shown, "\n  "))
	b := startBridge(t, env, bridgeSvc.Command...)
	addr := listening(t, b)

	shop, err := pg.Conn(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shop.Close(context.Background()) })
	slot := "pg2iceberg_" + bridgeSvc.Environment["PG2ICEBERG_PUBLICATION"]
	waitSlot(t, shop, slot, b)

	// The load, as the load service runs it, for a known number of
	// transactions; each inserts exactly two orders.
	const iterations = 25
	loadEnv := rw.env(t, loadSvc.Environment, map[string]string{
		"PGHOST": pg.Host, "PGUSER": pg.SuperUser, "PGPASSWORD": pg.SuperPassword, "LOAD_PAUSE": "0",
	})
	loadEnv = append(loadEnv, fmt.Sprint("PGPORT=", pg.Port), fmt.Sprint("LOAD_ITERATIONS=", iterations),
		"PATH="+pg.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	args := slices.Clone(loadSvc.Entrypoint)
	args[len(args)-1] = c.hostPath(t, loadSvc, args[len(args)-1])
	if out := runScript(t, loadEnv, args[0], args[1:]...); !strings.Contains(out, fmt.Sprintf("load: done, %d transactions", iterations)) {
		t.Fatalf("the load did not finish its %d transactions:\n%s", iterations, out)
	}
	waitCaughtUp(t, shop, slot, b)

	token, err := os.ReadFile(filepath.Join(c.dir, c.Secrets["catalog_token"].File))
	if err != nil {
		t.Fatal(err)
	}
	cat := icegoREST(t, "http://"+addr, strings.TrimSpace(string(token)), s3Keys(s3)) // the reader's own S3 keys
	load := func(name string) []row {
		tb, err := cat.LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatalf("load %s through the served catalog: %v", name, err)
		}
		return icegoScan(t, tb)
	}
	compareRows(t, "iceberg-go (REST)", "shop.orders", "id", load("shop.orders"), pgRows(t, shop, composeOrders, "shop.orders"))
	compareRows(t, "iceberg-go (REST)", "shop.customers", "id", load("shop.customers"), pgRows(t, shop, composeCustomers, "shop.customers"))
	inserts := 0
	for _, r := range load("shop.orders__changelog") {
		if r["op"] == "I" {
			inserts++
		}
	}
	if inserts != 2*iterations {
		t.Errorf("shop.orders__changelog has %d inserts, want %d (two per load transaction)", inserts, 2*iterations)
	} else {
		t.Logf("shop.orders__changelog holds the load's %d inserts", inserts)
	}
	// docker compose exec pg2iceberg pg2iceberg status: the same
	// environment, so the same slot, warehouse and catalog.
	status := runScript(t, env, binPath, "status")
	for _, want := range []string{"slot " + slot + ":", "shop.orders ", "shop.orders__changelog ", "shop.customers "} {
		if !strings.Contains(status, want) {
			t.Errorf("status in the service's environment does not show %q:\n%s", want, status)
		}
	}
	b.stop(t)
}

// The canonical forms of deploy/postgres/shop.sql's tables.
const (
	composeOrders = `id::text AS id, customer_id::text AS customer_id, amount::text AS amount, status,
  to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS placed_at, details::text AS details`
	composeCustomers = `id::text AS id, name, email, balance::text AS balance,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS created_at`
)

// runScript runs a command of the stack to its end and returns its output.
func runScript(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
