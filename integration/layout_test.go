package integration

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

// parquetFooterScript prints, for each Parquet file argv[2:], the codecs
// and the columns with a bloom filter as DuckDB reads them from the footer,
// and for each probe of argv[1] (a JSON list of [column, value]) whether
// the bloom filter of each row group excludes the value.
const parquetFooterScript = `import sys, json, duckdb
con = duckdb.connect()
probes = json.loads(sys.argv[1])
for f in sys.argv[2:]:
    meta = con.execute("SELECT path_in_schema, compression, bloom_filter_offset, bloom_filter_length FROM parquet_metadata(?)", [f]).fetchall()
    out = {"file": f, "codecs": sorted({m[1] for m in meta}), "bloom": sorted({m[0] for m in meta if m[2] is not None and m[3] > 0}), "excludes": {}}
    for col, val in probes:
        if col in out["bloom"]:
            out["excludes"][col] = [r[0] for r in con.execute("SELECT bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?) ORDER BY row_group_id", [f, col, val]).fetchall()]
    print(json.dumps(out))`

// parquetFooter is what parquetFooterScript reports of one file.
type parquetFooter struct {
	File     string            `json:"file"`
	Codecs   []string          `json:"codecs"`
	Bloom    []string          `json:"bloom"`
	Excludes map[string][]bool `json:"excludes"`
}

// parquetFooters reads the footers of files with DuckDB (see
// parquetFooterScript), by path.
func parquetFooters(t *testing.T, probes [][2]any, files []string) map[string]parquetFooter {
	t.Helper()
	p, err := json.Marshal(probes)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", append([]string{"-c", parquetFooterScript, string(p)}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb footers: %v\n%s", err, out)
	}
	got := map[string]parquetFooter{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var f parquetFooter
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("duckdb footer %q: %v", line, err)
		}
		got[f.File] = f
	}
	return got
}

// liveFilePaths returns the local paths of the data and of the delete files
// of a table's current snapshot.
func liveFilePaths(t *testing.T, tg target, name string) (data, deletes []string) {
	t.Helper()
	for path, content := range snapshotFiles(t, loadTable(t, tg, name), true) {
		p := strings.TrimPrefix(path, "file://")
		if content == icego.EntryContentData {
			data = append(data, p)
		} else {
			deletes = append(deletes, p)
		}
	}
	slices.Sort(data)
	slices.Sort(deletes)
	return data, deletes
}

// A mirror created with Parquet properties from the configuration file
// (snappy, a bloom filter on a named column, a target file size) writes
// them in the copy's files and the stream's, rolling over to several data
// files in one flush whose rows an UPDATE in the same transaction deletes
// exactly; the key column has a bloom filter by default, and DuckDB's probe
// of each file's filters excludes a key from every file but its own. A
// mirror whose codec is altered mid-stream through iceberg-go (as Spark's
// ALTER TABLE ... SET TBLPROPERTIES does) writes the new codec after the
// bridge's next commit, and a bad value set with it is a warning naming
// the table and property, not a stop.
func TestParquetLayout(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE a (id int PRIMARY KEY, email text, v text);
		INSERT INTO a SELECT g, 'user' || g || '@example.com', 'v' || g FROM generate_series(1, 20000) g;
		CREATE TABLE b (id int PRIMARY KEY, email text, v text);
		INSERT INTO b SELECT g, 'user' || g || '@example.com', 'v' || g FROM generate_series(1, 100) g;
		CREATE PUBLICATION lay_pub FOR TABLE a, b;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.a
    properties:
      write.parquet.compression-codec: snappy
      write.parquet.bloom-filter-enabled.column.email: true
      write.parquet.bloom-filter-fpp.column.id: 0.001
      write.target-file-size-bytes: 1
    compaction: {enabled: false}  # the test counts the files the stream writes
  - table: public.b
    compaction: {enabled: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "lay_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_lay_pub", b)
	// One transaction: 20000 rows, three files of one flush (a file ends
	// at its first batch of 8192 rows past the target), and updates of a
	// copied row and of a row in the flush's first, already closed, file.
	exec1(t, conn, `BEGIN; INSERT INTO a SELECT g, 'user' || g || '@example.com', 'v' || g FROM generate_series(20001, 40000) g;
		UPDATE a SET v = 'updated' WHERE id IN (5, 20010); COMMIT`)
	waitCaughtUp(t, conn, "pg2iceberg_lay_pub", b)

	bBefore, _ := liveFilePaths(t, tg, "public.b")
	tbl := loadTable(t, tg, "public.b")
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "fast"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The first commit after the change loads the new properties; the
	// files after it are gzip.
	exec1(t, conn, `UPDATE b SET v = 'one' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_lay_pub", b)
	bMid, _ := liveFilePaths(t, tg, "public.b")
	exec1(t, conn, `UPDATE b SET v = 'two' WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_lay_pub", b)
	b.stop(t)

	for _, name := range []string{"a", "b"} {
		compareRows(t, "pyiceberg", name, "id", pyicebergRows(t, tg, "public."+name), pgRows(t, conn, "id, email, v", name))
	}

	aData, aDeletes := liveFilePaths(t, tg, "public.a")
	if len(aData) != 6 || len(aDeletes) != 1 {
		t.Errorf("public.a has %d data and %d delete files, want 6 (3 copied, 3 streamed) and 1", len(aData), len(aDeletes))
	}
	footers := parquetFooters(t, [][2]any{{"id", 30000}, {"email", "user30000@example.com"}}, append(slices.Clone(aData), aDeletes...))
	var holders []string
	for _, f := range aData {
		ft := footers[f]
		if !slices.Equal(ft.Codecs, []string{"SNAPPY"}) || !slices.Equal(ft.Bloom, []string{"email", "id"}) {
			t.Errorf("data file %s: codecs %v, bloom filters on %v; want SNAPPY, on email and id", filepath.Base(f), ft.Codecs, ft.Bloom)
		}
		for col, ex := range ft.Excludes {
			if len(ex) != 1 {
				t.Errorf("data file %s: %d row groups probed on %s, want 1", filepath.Base(f), len(ex), col)
			} else if !ex[0] {
				holders = append(holders, filepath.Base(f)+":"+col)
			}
		}
	}
	// Row 30000 is in the stream's second file: only its filters let the
	// value through.
	if len(holders) != 2 || strings.Split(holders[0], ":")[0] != strings.Split(holders[1], ":")[0] {
		t.Errorf("bloom filters not excluding id 30000 and its email: %v, want both columns of one file", holders)
	}
	if d := footers[aDeletes[0]]; !slices.Equal(d.Codecs, []string{"SNAPPY"}) || len(d.Bloom) != 0 {
		t.Errorf("delete file: codecs %v, bloom filters on %v; want SNAPPY, none", d.Codecs, d.Bloom)
	}

	bAfter, _ := liveFilePaths(t, tg, "public.b")
	var last []string
	for _, f := range bAfter {
		if !slices.Contains(bMid, f) {
			last = append(last, f)
		}
	}
	bFooters := parquetFooters(t, [][2]any{}, append(slices.Clone(bBefore), last...))
	if len(bBefore) != 1 || len(last) != 1 {
		t.Fatalf("public.b: %d data files before the change, %d from the last update; want 1 and 1", len(bBefore), len(last))
	}
	if got := bFooters[bBefore[0]]; !slices.Equal(got.Codecs, []string{"ZSTD"}) || !slices.Equal(got.Bloom, []string{"id"}) {
		t.Errorf("public.b before the change: codecs %v, bloom filters on %v; want ZSTD (the default), on id", got.Codecs, got.Bloom)
	}
	if got := bFooters[last[0]]; !slices.Equal(got.Codecs, []string{"GZIP"}) {
		t.Errorf("public.b after the change: codecs %v, want GZIP", got.Codecs)
	}
	if props := loadTable(t, tg, "public.b").Properties(); props["write.parquet.compression-codec"] != "gzip" {
		t.Errorf("public.b properties after the bridge's commits: %v, want the codec set outside kept", slices.Sorted(maps.Keys(props)))
	}
	// inspect plans a key range with iceberg-go's planner: the copied file
	// of ids 8193..16384 and the streamed file that holds the updated rows
	// (ids 5..40000) of the six.
	out, err := exec.Command(binPath, append([]string{"inspect", "--table", "public.a", "--where", "id >= 10000 and id < 10100"}, tg.args()...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	t.Logf("inspect:\n%s", out)
	for _, want := range []string{
		"table public.a\n", "  1 id int required\n", "  0 (default): unpartitioned\n", "  0 (default): unsorted\n",
		"  write.parquet.compression-codec = snappy\n", "live files: 6 data files, ",
		"where id >= 10000 and id < 10100: the scan plans 2 of 6 data files (",
		"), 1 of 1 delete files\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(binPath, append([]string{"inspect", "--table", "public.a", "--where", "nosuch = 1"}, tg.args()...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nosuch") {
		t.Errorf("inspect with an unknown column: %v, want an error naming it:\n%s", err, out)
	}
	log := b.log()
	if n := strings.Count(log, "table property ignored"); n != 1 || !strings.Contains(log, "table=public.b") || !strings.Contains(log, `write.parquet.compression-level=\"fast\"`) {
		t.Errorf("%d warnings about the bad level, want one naming public.b and the property:\n%s", n, tail(log, 20))
	}
}
