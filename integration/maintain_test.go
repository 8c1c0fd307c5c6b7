package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// unreferenced lists the files under tbl's (local) location that its
// metadata does not name: worked out here from the metadata itself, not by
// the code under test. Named are the current and logged metadata files,
// the version hint, the key index, statistics files, and every snapshot's
// manifest list, manifests and the data and delete files they list.
func unreferenced(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimPrefix(tbl.Location(), "file://")
	named := map[string]bool{
		tbl.MetadataLocation():              true,
		loc + "/metadata/version-hint.text": true,
		loc + keyindex.FileName:             true,
	}
	meta := tbl.Metadata()
	for e := range meta.PreviousFiles() {
		named[e.MetadataFile] = true
	}
	for sf := range meta.Statistics() {
		named[sf.StatisticsPath] = true
	}
	for _, s := range meta.Snapshots() {
		named[s.ManifestList] = true
		mans, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mans {
			named[m.FilePath()] = true
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				named[e.DataFile().FilePath()] = true
			}
		}
	}
	var out []string
	err = filepath.WalkDir(loc, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !named[p] && !named["file://"+p] {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// plantOrphans copies one of tbl's files of each kind under a new name
// beside it: a Parquet data file, an Avro manifest, a metadata JSON and a
// Puffin statistics file (a Puffin file's magic and footer). It returns
// the files planted.
func plantOrphans(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	loc := strings.TrimPrefix(tbl.Location(), "file://")
	copyOf := func(dir string, match *regexp.Regexp, to string) string {
		var m []string
		_ = filepath.WalkDir(filepath.Join(loc, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && match.MatchString(filepath.Base(p)) {
				m = append(m, p)
			}
			return err
		})
		if len(m) == 0 {
			t.Fatalf("no %s under %s/%s", match, loc, dir)
		}
		b, err := os.ReadFile(m[0])
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(loc, to)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	puffin := filepath.Join(loc, "metadata", "planted-stats.puffin")
	footer := []byte(`{"blobs":[],"properties":{}}`)
	b := append([]byte("PFA1"), []byte("PFA1")...)
	b = append(b, footer...)
	b = append(b, byte(len(footer)), 0, 0, 0, 0, 0, 0, 0)
	b = append(b, []byte("PFA1")...)
	if err := os.WriteFile(puffin, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{
		copyOf("data", regexp.MustCompile(`\.parquet$`), "data/planted-data.parquet"),
		copyOf("metadata", regexp.MustCompile(`-m\d+\.avro$`), "metadata/planted-m0.avro"),
		copyOf("metadata", regexp.MustCompile(`\.metadata\.json$`), "metadata/99999-planted.metadata.json"),
		puffin,
	}
}

var orphansLine = regexp.MustCompile(`orphans: (\d+) found \([^)]*\), removed (\d+)`)

// maintain --orphans-older-than 0s with the bridge stopped leaves no file
// under a table's location that its metadata does not name: planted
// orphans of each kind and what a flush killed before its commit left. The
// mirror still equals Postgres, and a bridge started again streams on.
func TestMaintainRemovesOrphans(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 500) g;
		CREATE PUBLICATION mo_pub FOR TABLE t;`)
	tg := localTarget(t)
	run := runArgs(pg, "mo_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_mo_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'before' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_mo_pub", b)
	b.stop(t)
	// A flush's files are written, its commit is not: they stay behind.
	b = startBridge(t, []string{"PG2ICEBERG_TEST_CRASH=before-commit:1"}, run...)
	waitSlot(t, conn, "pg2iceberg_mo_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'killed' WHERE id <= 20`)
	b.crashed(t, 3*time.Minute)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_mo_pub", b)
	for i := range 3 {
		exec1(t, conn, `UPDATE t SET v = v || 'u' WHERE id % 5 = $1`, i)
		exec1(t, conn, `DELETE FROM t WHERE id = $1`, 100+i)
		waitCaughtUp(t, conn, "pg2iceberg_mo_pub", b)
	}
	b.stop(t)

	var planted []string
	for _, name := range []string{"public.t", "public.t__changelog"} {
		tbl := loadTable(t, tg, name)
		planted = append(planted, plantOrphans(t, tbl)...)
	}
	killed := 0
	for _, f := range unreferenced(t, loadTable(t, tg, "public.t")) {
		if !strings.Contains(f, "planted") {
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("the killed flush left no file in the mirror's location: nothing to show")
	}
	dry, err := runOnce(t, append([]string{"maintain", "--orphans-older-than", "0s", "--dry-run", "--table", "public.t"}, tg.args()...)...)
	if err != nil || !strings.Contains(dry, "orphans: would remove "+strconv.Itoa(4+killed)+" (") || strings.Contains(dry, "t__changelog") {
		t.Fatalf("maintain --dry-run --table public.t = %v, want %d orphans it would remove, of that table only:\n%s", err, 4+killed, dry)
	}
	for _, p := range planted {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("maintain --dry-run removed %s: %v", p, err)
		}
	}
	out, err := runOnce(t, append([]string{"maintain", "--orphans-older-than", "0s"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("maintain: %v\n%s", err, out)
	}
	t.Logf("maintain --orphans-older-than 0s:\n%s", out)
	for _, name := range []string{"public.t", "public.t__changelog"} {
		if left := unreferenced(t, loadTable(t, tg, name)); len(left) > 0 {
			t.Errorf("%s: files no metadata names left after maintain: %v\n%s", name, left, out)
		}
	}
	for _, p := range planted {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("planted orphan %s still there: %v", p, err)
		}
	}
	mirror := loadTable(t, tg, "public.t")
	for _, keep := range []string{keyindex.FileName, "/metadata/version-hint.text"} {
		if _, err := os.Stat(strings.TrimPrefix(mirror.Location(), "file://") + keep); err != nil {
			t.Errorf("maintain removed the mirror's %s: %v", keep, err)
		}
	}
	m := orphansLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("maintain printed no orphans line:\n%s", out)
	}
	if found, _ := strconv.Atoi(m[1]); found < 4+killed || m[1] != m[2] {
		t.Errorf("mirror orphans %s found, %s removed; want all of at least %d (4 planted, %d of the killed flush):\n%s", m[1], m[2], 4+killed, killed, out)
	}
	want := func() []row { return pgRows(t, conn, "id::text AS id, v", "t") }
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), want())
	compareRows(t, "iceberg-go", "t", "id", icegoRows(t, tg, "public.t"), want())

	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_mo_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'after' WHERE id <= 50`)
	exec1(t, conn, `INSERT INTO t VALUES (1000, 'new')`)
	waitCaughtUp(t, conn, "pg2iceberg_mo_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), want())
}

// A running bridge rewrites its manifests: after many flushes the current
// snapshots hold few, and readers still equal Postgres. maintain beside
// it refuses an orphan age that could reach a commit in flight, says why
// and how to go on, and otherwise expires snapshots under the bridge's
// feet while the stream goes on exactly.
func TestMaintainWhileBridgeRuns(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 200) g;
		CREATE PUBLICATION mr_pub FOR TABLE t;`)
	tg := localTarget(t)
	addr := freeAddr(t)
	// The bridge's compaction off: it would merge the files, and so the
	// manifests, this test needs many of.
	b := startBridge(t, nil, runArgs(pg, "mr_pub", tg, "--metrics-addr", addr, "--config", noCompaction(t, "public.t"))...)
	waitSlot(t, conn, "pg2iceberg_mr_pub", b)
	flushes := 3 * tiering.MaxManifests / 2 // one rewrite due at least
	for i := range flushes {
		exec1(t, conn, `INSERT INTO t VALUES ($1, 'new')`, 1000+i)
		exec1(t, conn, `UPDATE t SET v = v || 'u' WHERE id = $1`, 1+i)
		waitCaughtUp(t, conn, "pg2iceberg_mr_pub", b)
	}
	ctx := context.Background()
	for _, name := range []string{"public.t", "public.t__changelog"} {
		data, deletes, err := tiering.CountManifests(ctx, loadTable(t, tg, name))
		if err != nil {
			t.Fatal(err)
		}
		// A rewrite is looked at every 8 commits: at most 16 + 8 + 8.
		if data > tiering.MaxManifests+16 || data >= flushes {
			t.Errorf("%s: %d data manifests after %d flushes, want at most %d", name, data, flushes, tiering.MaxManifests+16)
		}
		if deletes > tiering.MaxManifests+16 || name == "public.t" && deletes >= flushes {
			t.Errorf("%s: %d delete manifests after %d flushes, want at most %d", name, deletes, flushes, tiering.MaxManifests+16)
		}
		t.Logf("%s: %d data and %d delete manifests after %d flushes", name, data, deletes, flushes)
	}
	_, metrics := httpGet(t, "http://"+addr+"/metrics", "")
	if !regexp.MustCompile(`\npg2iceberg_manifest_rewrites_total [1-9]`).MatchString(metrics) {
		t.Errorf("/metrics counts no manifest rewrite:\n%s", metrics)
	}

	out, err := runOnce(t, append([]string{"maintain", "--orphans-older-than", "0s"}, tg.args()...)...)
	if err == nil || !strings.Contains(out, "a bridge is writing this warehouse (slot pg2iceberg_mr_pub") ||
		!strings.Contains(out, "give --orphans-older-than 24h0m0s or more, or stop the bridge first") {
		t.Fatalf("maintain --orphans-older-than 0s beside a running bridge = %v, want a refusal saying how to go on:\n%s", err, out)
	}
	out, err = runOnce(t, append([]string{"maintain", "--retention-max-age", "1ms", "--retention-min-snapshots", "1"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("maintain beside a running bridge: %v\n%s", err, out)
	}
	if !strings.Contains(out, "manifests: not rewritten: the running bridge rewrites them") || !regexp.MustCompile(`snapshots: expired [1-9]`).MatchString(out) {
		t.Errorf("maintain beside a running bridge did not expire and leave the manifests:\n%s", out)
	}
	if n := len(loadTable(t, tg, "public.t").Metadata().Snapshots()); n > 2 {
		t.Errorf("the mirror has %d snapshots after an expiry keeping 1, want 1 (or 2: a flush since)", n)
	}
	exec1(t, conn, `UPDATE t SET v = 'after' WHERE id <= 50`)
	exec1(t, conn, `DELETE FROM t WHERE id > 1010`)
	waitCaughtUp(t, conn, "pg2iceberg_mr_pub", b)
	b.stop(t)
	want := pgRows(t, conn, "id::text AS id, v", "t")
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), want)
	compareRows(t, "iceberg-go", "t", "id", icegoRows(t, tg, "public.t"), want)
	dir := filepath.Join(mustAbs(t, tg.warehouse), "public.db", "t")
	got := duckdbRow(t, "SELECT count(*), sum(id), count(DISTINCT v) FROM iceberg_scan(?)", dir)
	var pgWant string
	if err := conn.QueryRow(ctx, `SELECT '(' || count(*) || ', ' || sum(id) || ', ' || count(DISTINCT v) || ')' FROM t`).Scan(&pgWant); err != nil {
		t.Fatal(err)
	}
	if got != pgWant {
		t.Errorf("duckdb reads the mirror as %s, want %s (Postgres)", got, pgWant)
	}
}

// On S3 the running bridge's writer lease is an object under the
// warehouse, gone when it stops, and maintain removes an orphan object and
// keeps the key index.
func TestMaintainS3(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
		CREATE PUBLICATION ms_pub FOR TABLE t;`)
	tg := s3Target(t)
	ctx := context.Background()
	lease := "wh/.pg2iceberg/writers/pg2iceberg_ms_pub.json"
	b := startBridge(t, tg.env(), runArgs(pg, "ms_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_ms_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'u' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_ms_pub", b)
	if got, err := tg.s3.GetObject(ctx, "lake", lease); err != nil || !strings.Contains(string(got), `"slot":"pg2iceberg_ms_pub"`) {
		t.Fatalf("writer lease of the running bridge: %q, %v", got, err)
	}
	b.stop(t)
	if _, err := tg.s3.GetObject(ctx, "lake", lease); err == nil {
		t.Fatalf("writer lease %s left after the bridge stopped", lease)
	}
	orphan := "wh/public.db/t/data/planted.parquet"
	if err := tg.s3.PutObject(ctx, "lake", orphan, []byte("PAR1 not referenced PAR1")); err != nil {
		t.Fatal(err)
	}
	m := startBridge(t, tg.env(), append([]string{"maintain", "--orphans-older-than", "0s"}, tg.args()...)...)
	m.exited(t, 2*time.Minute)
	if m.err != nil || !strings.Contains(m.log(), "orphans: 1 found") {
		t.Fatalf("maintain on S3: %v\n%s", m.err, m.log())
	}
	if _, err := tg.s3.GetObject(ctx, "lake", orphan); err == nil {
		t.Errorf("orphan %s still there", orphan)
	}
	if _, err := tg.s3.GetObject(ctx, "lake", "wh/public.db/t"+keyindex.FileName); err != nil {
		t.Errorf("maintain removed the key index: %v", err)
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t"))
}

// A table's retention block in --config decides the running bridge's
// expiry over the table's properties: after a restart the first commit
// keeps the newest 2 snapshots of the mirror and of its changelog, and
// /metrics counts what expired.
func TestRetentionFromConfig(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION rc_pub FOR TABLE t;`)
	tg := localTarget(t)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: public.t\n    retention: {max_snapshot_age: 1ms, min_snapshots: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	run := runArgs(pg, "rc_pub", tg, "--config", cfg, "--metrics-addr", addr)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rc_pub", b)
	for i := range 4 {
		exec1(t, conn, `UPDATE t SET v = v || 'u' WHERE id = $1`, i+1)
		waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	}
	b.stop(t)
	before := len(loadTable(t, tg, "public.t").Metadata().Snapshots())
	if before < 5 {
		t.Fatalf("the mirror has %d snapshots after a copy and 4 flushes, want 5 or more", before)
	}
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_rc_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'after' WHERE id = 10`)
	waitCaughtUp(t, conn, "pg2iceberg_rc_pub", b)
	_, metrics := httpGet(t, "http://"+addr+"/metrics", "")
	b.stop(t)
	for _, name := range []string{"public.t", "public.t__changelog"} {
		if n := len(loadTable(t, tg, name).Metadata().Snapshots()); n != 2 {
			t.Errorf("%s has %d snapshots after an expiry keeping 2 (its table property says 20), want 2", name, n)
		}
	}
	if m := regexp.MustCompile(`\npg2iceberg_snapshots_expired_total (\d+)\n`).FindStringSubmatch(metrics); m == nil || m[1] == "0" {
		t.Errorf("/metrics counts no expired snapshot:\n%s", metrics)
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t"))
}
