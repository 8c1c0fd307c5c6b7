package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// dvReaders is what each reader of the interop suite does with a format
// v3 mirror whose deletes are deletion vectors (TestDeletionVectorReaders):
// "reads" (every row equal to PostgreSQL) or how it fails. It is the
// v3 column of docs/querying.md's interop table; a reader that changes
// fails the test until both are updated.
var dvReaders = map[string]string{
	"iceberg-go":    "reads",
	"pyiceberg":     "reads",
	"Spark SQL":     "reads",
	"DuckDB":        "reads",
	"DuckDB (REST)": "reads",
}

// dvSource is the table of the deletion-vector tests.
const dvSource = `CREATE TABLE ev (id int PRIMARY KEY, n bigint NOT NULL, v text);
	INSERT INTO ev SELECT g, g * 10, 'v' || g FROM generate_series(1, 2000) g;
	CREATE PUBLICATION dv_pub FOR TABLE ev;`

// streamDV streams updates and deletes of ev into a format v3 mirror on
// tg over several flushes, then again with compaction on until one is
// installed, and more deletes after it; it requires live deletion vectors
// and no compaction or key-index trouble, and returns how many are live.
func streamDV(t *testing.T, pg *harness.Postgres, conn *pgx.Conn, tg target) int {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	writeCfg := func(compact string) {
		if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.ev\n    format_version: 3\n    compaction: "+compact+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("{enabled: false}")
	b := startBridge(t, tg.env(), runArgs(pg, "dv_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_dv_pub", b)
	change := func(i int) {
		exec1(t, conn, fmt.Sprintf(`BEGIN;
			UPDATE ev SET n = n + 1, v = 'u%[1]d' WHERE id %% 7 = %[2]d;
			DELETE FROM ev WHERE id %% 101 = %[1]d;
			INSERT INTO ev SELECT g, g, 'new' FROM generate_series(%[3]d, %[3]d + 49) g;
			COMMIT`, i, i%7, 10000+i*50))
	}
	for i := range 4 {
		change(i)
		waitCaughtUp(t, conn, "pg2iceberg_dv_pub", b)
	}
	b.stop(t)
	if v := icegoTable(t, tg, "public.ev").Metadata().Version(); v != 3 {
		t.Fatalf("public.ev is format version %d, want 3", v)
	}
	writeCfg("{min_input_files: 4}")
	b = startBridge(t, tg.env(), runArgs(pg, "dv_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_dv_pub", b)
	untilCompacted(t, b, "public.ev", 1, 4, 40, func(i int) {
		change(i)
		waitCaughtUp(t, conn, "pg2iceberg_dv_pub", b)
	})
	change(60)
	waitCaughtUp(t, conn, "pg2iceberg_dv_pub", b)
	b.stop(t)
	for _, bad := range []string{"compaction failed", "compaction not installed", "key index does not match"} {
		if strings.Contains(b.log(), bad) {
			t.Errorf("%s: %s", bad, lastLine(b.log(), bad))
		}
	}
	dvs := 0
	for _, f := range liveFilesOf(t, icegoTable(t, tg, "public.ev")) {
		if strings.HasSuffix(f.path, ".puffin") {
			dvs++
		} else if f.content != 0 {
			t.Errorf("live delete file %s is not a deletion vector", filepath.Base(f.path))
		}
	}
	if dvs == 0 {
		t.Fatalf("no live deletion vector in public.ev: the readers would not read any")
	}
	t.Logf("public.ev: %d live deletion vectors; %s", dvs, lastLine(b.log(), `msg="compaction installed" table=public.ev `))
	return dvs
}

// A format v3 mirror (format_version: 3 in the configuration file) with
// updates and deletes over several flushes, so a data file's deletion
// vector is replaced by one holding the old deletes and the new, and a
// compaction by the bridge while it streams, then more deletes: each
// reader of the interop suite reads it, and what it returns is compared
// with PostgreSQL and with dvReaders.
func TestDeletionVectorReaders(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, dvSource)
	tg := localTarget(t)
	dvs := streamDV(t, pg, conn, tg)

	want := pgRows(t, conn, "id, n, v", "ev")
	got := map[string]string{}
	compare := func(reader string, rows []row) {
		same := sameRows(rows, want)
		if dvReaders[reader] == "reads" {
			same = compareRows(t, reader, "ev (v3, deletion vectors)", "id", rows, want)
		}
		got[reader] = "reads"
		if !same {
			got[reader] = fmt.Sprintf("wrong rows (%d, PostgreSQL %d)", len(rows), len(want))
		}
	}
	compare("iceberg-go", icegoRows(t, tg, "public.ev"))
	if out, err := pyicebergDump(tg.env(), "--catalog-uri", "sqlite:///"+mustAbs(t, tg.catalog), "--catalog-name", "pg2iceberg", "--table", "public.ev", "--warehouse", "file://"+mustAbs(t, tg.warehouse)); err != nil {
		got["pyiceberg"] = "error: " + firstLine(err.Error()+" "+string(out))
	} else {
		compare("pyiceberg", parseRows(t, out))
	}
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))
	var msg *string
	if spark.do(t, map[string]string{"op": "error", "sql": "SELECT * FROM pg.public.ev"}, &msg) && msg != nil {
		got["Spark SQL"] = "error: " + firstLine(*msg)
	} else if rows, ok := spark.dump(t, "SELECT id, n, v FROM pg.public.ev"); ok {
		compare("Spark SQL", rows)
	}
	dir := filepath.Join(mustAbs(t, tg.warehouse), "public.db", "ev")
	var pgAgg string
	if err := conn.QueryRow(context.Background(), `SELECT '(' || count(*) || ', ' || sum(id) || ', ' || sum(n) || ', ' || sum(length(v)) || ')' FROM ev`).Scan(&pgAgg); err != nil {
		t.Fatal(err)
	}
	// duck runs a DuckDB reader that prints the aggregates of ev and
	// records whether they are PostgreSQL's.
	duck := func(reader string, cmd *exec.Cmd) {
		out, err := cmd.CombinedOutput()
		switch agg := strings.TrimSpace(string(out)); {
		case err != nil:
			got[reader] = "error: " + firstLine(lastLine(agg, "rror"))
		case agg == pgAgg:
			got[reader] = "reads"
		default:
			got[reader] = "wrong rows"
			t.Logf("%s: (count, sum(id), sum(n), sum(length(v))) = %s, PostgreSQL %s", reader, agg, pgAgg)
		}
	}
	duck("DuckDB", exec.Command("python3", "-c", duckdbScript, "SELECT count(*), sum(id), sum(n), sum(length(v)) FROM iceberg_scan(?)", dir))
	// DuckDB through ATTACH to the bridge's REST catalog (serve).
	cmd := exec.Command("python3", "readers/duckdb_report.py", "--rest-uri", uri, "--token-env", readerTokenEnv,
		"--query", "SELECT count(*), sum(id), sum(n), sum(length(v)) FROM pg.public.ev")
	cmd.Env = append(os.Environ(), readerTokenEnv+"="+token)
	duck("DuckDB (REST)", cmd)
	var report strings.Builder
	for _, r := range []string{"iceberg-go", "pyiceberg", "Spark SQL", "DuckDB", "DuckDB (REST)"} {
		fmt.Fprintf(&report, "\n  %-13s %s", r, got[r])
		if !strings.HasPrefix(got[r], dvReaders[r]) {
			t.Errorf("%s on a v3 mirror with deletion vectors: %s, dvReaders says %q: update dvReaders and docs/querying.md", r, got[r], dvReaders[r])
		}
	}
	t.Logf("readers of a v3 mirror with deletion vectors (%d live, after a compaction):%s", dvs, report.String())
}

// The same v3 stream into a warehouse on S3 (versitygw): the deletion
// vectors are Puffin files in the bucket, the bridge reads them back when a
// flush replaces a file's vector and when it compacts, and iceberg-go and
// pyiceberg read the mirror as PostgreSQL has it.
func TestDeletionVectorsS3(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, dvSource)
	tg := s3Target(t)
	streamDV(t, pg, conn, tg)
	for _, f := range liveFilesOf(t, icegoTable(t, tg, "public.ev")) {
		if !strings.HasPrefix(f.path, "s3://lake/wh/") {
			t.Errorf("live file %s is not in the S3 warehouse", f.path)
		}
	}
	want := pgRows(t, conn, "id, n, v", "ev")
	compareRows(t, "iceberg-go", "ev (v3 on S3)", "id", icegoRows(t, tg, "public.ev"), want)
	compareRows(t, "pyiceberg", "ev (v3 on S3)", "id", pyicebergRows(t, tg, "public.ev"), want)
}

// sameRows reports whether got holds want's rows by id, each with want's
// values (compareRows without the report).
func sameRows(got, want []row) bool {
	g := rowsKey(got, "id")
	if len(got) != len(want) || len(g) != len(want) {
		return false
	}
	for _, w := range want {
		r, ok := g[fmt.Sprint(w["id"])]
		if !ok {
			return false
		}
		for c, v := range w {
			if fmt.Sprint(r[c]) != fmt.Sprint(v) {
				return false
			}
		}
	}
	return true
}

// firstLine is s up to its first newline, at most 300 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
