package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// rowGroupReadsScript runs the query argv[1] in DuckDB over the Parquet
// files argv[3:] (read_parquet of the list, written FILES in the query)
// through an fsspec file system that records every read, and reports the
// result's first row and, from the files' footers, how many row groups
// there are, how many of them DuckDB read any column chunk of, and how
// many the min/max of their column id admit the integer argv[2] by. The
// footer and the bloom filters lie outside the column chunks: a row group
// its statistics or its bloom filters exclude is not read.
const rowGroupReadsScript = `import sys, json, duckdb
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem
reads = []
class Counted(LocalFileSystem):
    protocol = "counted"
    root_marker = "/"
    @classmethod
    def _strip_protocol(cls, path):
        return str(path).removeprefix("counted://")
    def _open(self, path, mode="rb", **kw):
        path = self._strip_protocol(path)
        f = super()._open(path, mode, **kw)
        class Reads:
            def read(self, n=-1):
                at = f.tell()
                b = f.read(n)
                reads.append((path, at, len(b)))
                return b
            def __getattr__(self, a):
                return getattr(f, a)
            def __enter__(self):
                return self
            def __exit__(self, *a):
                f.close()
        return Reads()
key, files = int(sys.argv[2]), sys.argv[3:]
con = duckdb.connect()
con.register_filesystem(Counted())
row = con.execute(sys.argv[1].replace("FILES", "[" + ",".join("'counted://" + f + "'" for f in files) + "]")).fetchone()
groups = read = bounds = 0
for f in files:
    md = pq.ParquetFile(f).metadata
    for g in range(md.num_row_groups):
        groups += 1
        st = md.row_group(g).column(pq.ParquetFile(f).schema_arrow.get_field_index("id")).statistics
        bounds += st.min <= key <= st.max
        hit = False
        for c in range(md.num_columns):
            cc = md.row_group(g).column(c)
            start = cc.dictionary_page_offset if cc.has_dictionary_page and cc.dictionary_page_offset else cc.data_page_offset
            end = start + cc.total_compressed_size
            hit = hit or any(p == f and at < end and at + n > start for p, at, n in reads)
        read += hit
print(json.dumps({"row": str(row), "groups": groups, "read": read, "bounds": bounds}))`

// rowGroupReads is what rowGroupReadsScript reports.
type rowGroupReads struct {
	Row    string `json:"row"`
	Groups int    `json:"groups"`
	Read   int    `json:"read"`
	Bounds int    `json:"bounds"`
}

// duckdbRowGroups runs query over the live data files of a table, whose
// row groups' bounds are checked against key (see rowGroupReadsScript).
func duckdbRowGroups(t *testing.T, tg target, name, query string, key int64) rowGroupReads {
	t.Helper()
	data, _ := liveFilePaths(t, tg, name)
	out, err := exec.Command("python3", append([]string{"-c", rowGroupReadsScript, query, strconv.FormatInt(key, 10)}, data...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb row groups of %s: %v\n%s", name, err, out)
	}
	var r rowGroupReads
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("duckdb row groups of %s: %q: %v", name, out, err)
	}
	return r
}

var filesReadRE = regexp.MustCompile(`Total Files Read: (\d+)`)

// duckdbFilesRead runs EXPLAIN ANALYZE of query (on iceberg_scan(?) of the
// table directory dir, with ints) and returns the data files DuckDB's
// Iceberg scan read, as its profile reports them.
func duckdbFilesRead(t *testing.T, query, dir string, ints ...int64) int {
	t.Helper()
	plan := duckdbRow(t, "EXPLAIN ANALYZE "+query, dir, ints...)
	m := filesReadRE.FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("EXPLAIN ANALYZE %s: no Total Files Read in\n%s", query, plan)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// sparkScan is a scan node of an executed Spark plan and its SQL metrics.
type sparkScan struct {
	Node    string           `json:"node"`
	Metrics map[string]int64 `json:"metrics"`
}

// scanMetrics runs sql in Spark and returns its rows and the metrics of
// the one scan of its executed plan; for an Iceberg table, BatchScan's
// resultDataFiles, skippedDataFiles (its scan report) and numOutputRows
// (the rows of the row groups its Parquet reader did not skip).
func (s *sparkSession) scanMetrics(t *testing.T, sql string) ([]row, map[string]int64, bool) {
	t.Helper()
	var out struct {
		Rows  []row       `json:"rows"`
		Scans []sparkScan `json:"scans"`
	}
	if !s.do(t, map[string]string{"op": "scan_metrics", "sql": sql}, &out) {
		return nil, nil, false
	}
	if len(out.Scans) != 1 || !strings.HasPrefix(out.Scans[0].Node, "BatchScan ") {
		t.Errorf("Spark %s: scans %v, want one BatchScan", sql, out.Scans)
		return nil, nil, false
	}
	return out.Rows, out.Scans[0].Metrics, true
}

// pgRow returns the text of the first row of a Postgres query.
func pgRow(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// A point query by key on a mirror the bridge wrote over five flushes
// (one data file each, three row groups a file) skips files and row groups
// in readers we did not write, DuckDB and Spark, and answers as Postgres
// does. Where the key grows with time (seqk, a serial key), the manifests'
// id bounds leave 1 of the 5 data files to read (DuckDB's EXPLAIN ANALYZE:
// Total Files Read; Spark's BatchScan: resultDataFiles 1, skippedDataFiles
// 4), a range over two flushes 2, and pg2iceberg inspect plans the same;
// within that file the row groups' min/max leave 1 of its 3 (DuckDB's
// Parquet reader reads the column chunks of 1 row group of the 15; Spark's
// scan outputs that row group's rows only). Where keys are scattered
// (scat, every file and row group spans the whole key range), no file is
// skipped, but the bloom filters the mirror keeps on its key do the same
// for row groups (at most 2 read, with a false positive). Filters the
// readers cannot push down read every row group: the figures measure.
func TestPointQuerySkips(t *testing.T) {
	t.Parallel()
	const flush = 20000
	const seqRows = `SELECT g, 'v' || g FROM generate_series(%d, %d) g`
	// 7919 is prime to 5*flush: the ids are 1..5*flush, each file's spread
	// over the whole range.
	const scatRows = `SELECT (g * 7919) %% 100000 + 1, 'v' || g FROM generate_series(%d, %d) g`
	pg, conn := startSource(t, `CREATE TABLE seqk (id bigint PRIMARY KEY, v text);
		CREATE TABLE scat (id bigint PRIMARY KEY, v text);
		INSERT INTO seqk `+fmt.Sprintf(seqRows, 1, flush)+`;
		INSERT INTO scat `+fmt.Sprintf(scatRows, 1, flush)+`;
		CREATE PUBLICATION skip_pub FOR TABLE seqk, scat;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	// Pages of 4 KiB let a row group end at its first batch of 8192 rows
	// past 1 byte; compaction off keeps the five files.
	if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.seqk
    properties: {write.parquet.row-group-size-bytes: 1, write.parquet.page-size-bytes: 4096}
    compaction: {enabled: false}
  - table: public.scat
    properties: {write.parquet.row-group-size-bytes: 1, write.parquet.page-size-bytes: 4096}
    compaction: {enabled: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "skip_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_skip_pub", b)
	// Spark's JVM starts while the bridge writes.
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))
	for i := 1; i < 5; i++ {
		exec1(t, conn, `INSERT INTO seqk `+fmt.Sprintf(seqRows, i*flush+1, (i+1)*flush))
		exec1(t, conn, `INSERT INTO scat `+fmt.Sprintf(scatRows, i*flush+1, (i+1)*flush))
		waitCaughtUp(t, conn, "pg2iceberg_skip_pub", b)
	}
	b.stop(t)

	const key = 45678
	for _, name := range []string{"seqk", "scat"} {
		data, deletes := liveFilePaths(t, tg, "public."+name)
		if len(data) != 5 || len(deletes) != 0 {
			t.Fatalf("public.%s has %d data and %d delete files, want 5 (one a flush) and none", name, len(data), len(deletes))
		}
		dir := filepath.Join(tg.warehouse, "public.db", name)
		point := `SELECT id, v FROM iceberg_scan(?) WHERE id = ?`
		want := pgRow(t, conn, `SELECT '(' || id || ', ''' || v || ''')' FROM `+name+` WHERE id = $1`, key)
		if got := duckdbRow(t, point, dir, key); got != want {
			t.Errorf("DuckDB %s on %s: %s, want %s (Postgres)", point, name, got, want)
		}
		filesRead := duckdbFilesRead(t, point, dir, key)
		rg := duckdbRowGroups(t, tg, "public."+name, fmt.Sprintf(`SELECT id, v FROM read_parquet(FILES) WHERE id = %d`, key), key)
		all := duckdbRowGroups(t, tg, "public."+name, fmt.Sprintf(`SELECT id, v FROM read_parquet(FILES) WHERE CAST(id AS VARCHAR) = '%d'`, key), key)
		t.Logf("public.%s id = %d: DuckDB iceberg_scan reads %d of %d data files; read_parquet reads %d of %d row groups, %d admitted by their id bounds (%d of %d with a filter it cannot push down)",
			name, key, filesRead, len(data), rg.Read, rg.Groups, rg.Bounds, all.Read, all.Groups)
		if rg.Row != want || all.Row != want {
			t.Errorf("DuckDB read_parquet on %s: %s and %s, want %s (Postgres)", name, rg.Row, all.Row, want)
		}
		if rg.Groups != 15 || all.Read != all.Groups {
			t.Errorf("public.%s: %d row groups, %d read by a filter DuckDB cannot push down; want 15 (three a file), all", name, rg.Groups, all.Read)
		}
		sql := fmt.Sprintf("SELECT id, v FROM pg.public.%s WHERE id = %d", name, key)
		got, m, ok := spark.scanMetrics(t, sql)
		if ok {
			compareRows(t, "Spark SQL", name+" id = "+strconv.Itoa(key), "id", got, pgRows(t, conn, "id, v", fmt.Sprintf("%s WHERE id = %d", name, key)))
			t.Logf("public.%s id = %d: Spark's BatchScan plans %d data files, skips %d, outputs %d rows of %d", name, key, m["resultDataFiles"], m["skippedDataFiles"], m["numOutputRows"], 5*flush)
			// The rows of fewer row groups than a file has: the Parquet
			// reader skipped the others (min/max or bloom filters).
			if m["numOutputRows"] < 1 || m["numOutputRows"] >= flush {
				t.Errorf("Spark %s: BatchScan output %d rows, want at least 1 and fewer than a file's %d (row groups skipped)", sql, m["numOutputRows"], flush)
			}
			// A filter Spark does not push down reads every row.
			ctl := fmt.Sprintf("SELECT id, v FROM pg.public.%s WHERE CAST(id AS STRING) = '%d'", name, key)
			if _, c, ok := spark.scanMetrics(t, ctl); ok && (c["resultDataFiles"] != 5 || c["numOutputRows"] != 5*flush) {
				t.Errorf("Spark %s: BatchScan planned %d data files, output %d rows; want 5, all %d", ctl, c["resultDataFiles"], c["numOutputRows"], 5*flush)
			}
		}
		switch name {
		case "seqk":
			if ok && (m["resultDataFiles"] != 1 || m["skippedDataFiles"] != 4) {
				t.Errorf("Spark %s: %d data files planned, %d skipped; want 1, 4", sql, m["resultDataFiles"], m["skippedDataFiles"])
			}
			if filesRead != 1 || rg.Read != 1 || rg.Bounds != 1 {
				t.Errorf("public.seqk id = %d: DuckDB read %d data files, %d row groups (%d admitted by their bounds); want 1 (the bounds of the others exclude it), 1 (1)", key, filesRead, rg.Read, rg.Bounds)
			}
		case "scat":
			if ok && (m["resultDataFiles"] != 5 || m["skippedDataFiles"] != 0) {
				t.Errorf("Spark %s: %d data files planned, %d skipped; want 5, 0 (their bounds span every key)", sql, m["resultDataFiles"], m["skippedDataFiles"])
			}
			if filesRead != len(data) || rg.Bounds != rg.Groups || rg.Read > 2 {
				t.Errorf("public.scat id = %d: DuckDB read %d data files, %d row groups (%d admitted by their bounds); want all %d (their bounds span every key), at most 2 (the bloom filters exclude the rest; all admitted)", key, filesRead, rg.Read, rg.Bounds, len(data))
			}
		}
	}

	// A range over two flushes of seqk: 2 files in DuckDB and in
	// iceberg-go's plan (pg2iceberg inspect).
	dir := filepath.Join(tg.warehouse, "public.db", "seqk")
	const lo, hi = 2*flush - 1000, 2*flush + 1000
	rng := `SELECT count(*), sum(id) FROM iceberg_scan(?) WHERE id BETWEEN ? AND ?`
	want := pgRow(t, conn, `SELECT '(' || count(*) || ', ' || sum(id) || ')' FROM seqk WHERE id BETWEEN $1 AND $2`, lo, hi)
	if got := duckdbRow(t, rng, dir, lo, hi); got != want {
		t.Errorf("DuckDB %s: %s, want %s (Postgres)", rng, got, want)
	}
	if n := duckdbFilesRead(t, rng, dir, lo, hi); n != 2 {
		t.Errorf("DuckDB %s read %d data files, want 2 of 5", rng, n)
	}
	for where, want := range map[string]string{
		fmt.Sprintf("id = %d", key):                  ": the scan plans 1 of 5 data files (",
		fmt.Sprintf("id >= %d and id <= %d", lo, hi): ": the scan plans 2 of 5 data files (",
	} {
		if got := inspectPlans(t, tg, "public.seqk", where); !strings.Contains(got, want) {
			t.Errorf("inspect public.seqk --where %q: %q, want %q", where, got, want)
		}
	}
}
