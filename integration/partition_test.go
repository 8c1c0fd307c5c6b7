package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// liveFile is a live file of a table's current snapshot: its content,
// spec and partition.
type liveFile struct {
	path      string
	content   icego.ManifestEntryContent
	spec      int
	partition string // the partition values by field name, sorted
	rows      int64
}

// liveFilesOf lists the live files of tbl's current snapshot.
func liveFilesOf(t *testing.T, tbl *table.Table) []liveFile {
	t.Helper()
	fsys, manifests := currentManifests(t, tbl)
	var out []liveFile
	for _, m := range manifests {
		spec := tbl.Metadata().PartitionSpecByID(int(m.PartitionSpecID()))
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			df := e.DataFile()
			var parts []string
			for _, f := range spec.Fields() {
				parts = append(parts, fmt.Sprintf("%s=%v", f.Name, df.Partition()[f.FieldID]))
			}
			slices.Sort(parts)
			out = append(out, liveFile{path: df.FilePath(), content: df.ContentType(), spec: int(df.SpecID()), partition: strings.Join(parts, ","), rows: df.Count()})
		}
	}
	return out
}

// currentManifests returns the file IO and the manifests of tbl's current
// snapshot.
func currentManifests(t *testing.T, tbl *table.Table) (icebergio.IO, []icego.ManifestFile) {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, manifests
}

// inspectPlans runs pg2iceberg inspect --where and returns its line about
// the data files the scan plans.
func inspectPlans(t *testing.T, tg target, name, where string) string {
	t.Helper()
	out, err := exec.Command(binPath, append([]string{"inspect", "--table", name, "--where", where}, tg.args()...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("inspect %s --where %s: %v\n%s", name, where, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "where ") {
			return l
		}
	}
	t.Fatalf("inspect %s: no plan line:\n%s", name, out)
	return ""
}

// A mirror partitioned by the configuration with every transform (day,
// bucket, truncate and identity on one table; hour, year and month on
// another) writes one data file per partition in each flush, from the copy
// and the stream, with the partition values in the manifests; updates
// that move rows to other partitions (a new day, a new region, a new key)
// and deletes are exact, their position deletes written in the partition
// of the rows' old files. A spec change in the configuration (and a
// restart) makes a new spec current: new files go under it, old files keep
// theirs, and updates of rows in old files delete under the old spec. A
// spec set by another writer with the configuration unchanged is followed.
// pyiceberg, Spark, DuckDB and inspect's planner read what PostgreSQL
// holds.
func TestPartitionTransforms(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE ev (id int PRIMARY KEY, created_at timestamptz NOT NULL, region text, name text, n bigint);
		INSERT INTO ev SELECT g, '2026-01-01 00:00:00+00'::timestamptz + (g % 4) * interval '1 day', CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, 'name' || g, g FROM generate_series(1, 200) g;
		CREATE TABLE tm (id bigint PRIMARY KEY, at timestamp, d date, m date, v text);
		INSERT INTO tm SELECT g, '2025-12-31 22:00:00'::timestamp + g * interval '1 hour', '2024-06-15'::date + g * 200, '2025-01-10'::date + g * 35, 'v' || g FROM generate_series(1, 6) g;
		CREATE PUBLICATION part_pub FOR TABLE ev, tm;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	writeCfg := func(evFields string) {
		if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.ev
    partition: `+evFields+`
    compaction: {enabled: false}  # the test counts the files the stream writes
  - table: public.tm
    partition: ["hour(at)", "years(d)", "month(m)"]
    compaction: {enabled: false}
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(`["day(created_at)", "bucket(2, id)", "truncate(5, name)", "region"]`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "part_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_part_pub", b)
	// Moves: id 1 to another day, id 2 to another region, id 3 to another
	// key (and bucket), id 4 deleted; id 201 inserted and moved in one
	// transaction; in tm a row to another hour and another year.
	exec1(t, conn, `BEGIN;
		UPDATE ev SET created_at = created_at + interval '10 days' WHERE id = 1;
		UPDATE ev SET region = 'ap' WHERE id = 2;
		UPDATE ev SET id = 1003 WHERE id = 3;
		DELETE FROM ev WHERE id = 4;
		INSERT INTO ev VALUES (201, '2026-02-01 12:00:00+00', 'eu', 'late', 201);
		UPDATE ev SET created_at = '2026-03-01 00:00:00+00' WHERE id = 201;
		UPDATE tm SET at = at + interval '3 hours', d = d + 400 WHERE id = 1;
		COMMIT`)
	waitCaughtUp(t, conn, "pg2iceberg_part_pub", b)
	evCols := "id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS created_at, region, name, n"
	tmCols := "id, to_char(at, 'YYYY-MM-DD HH24:MI:SS.US') AS at, d, m, v"
	compareRows(t, "pyiceberg", "ev", "id", pyicebergRows(t, tg, "public.ev"), pgRows(t, conn, evCols, "ev"))
	compareRows(t, "pyiceberg", "tm", "id", pyicebergRows(t, tg, "public.tm"), pgRows(t, conn, tmCols, "tm"))

	ev := loadTable(t, tg, "public.ev")
	if got := ev.Spec().String(); !strings.Contains(got, "created_at_day") || !strings.Contains(got, "id_bucket_2") || !strings.Contains(got, "name_trunc_5") || !strings.Contains(got, "region") {
		t.Errorf("public.ev spec %s, want day(created_at), bucket(2, id), truncate(5, name), region", got)
	}
	parts := map[string]int{}
	var deletes []liveFile
	for _, f := range liveFilesOf(t, ev) {
		if f.content == icego.EntryContentData {
			parts[f.partition]++
		} else {
			deletes = append(deletes, f)
		}
		if strings.Contains(f.partition, "<nil>") {
			t.Errorf("file %s has a NULL partition value: %s", filepath.Base(f.path), f.partition)
		}
	}
	t.Logf("public.ev: %d data partitions, delete files %v", len(parts), deletes)
	// Four rows moved out of copied files of four partitions (ids 1, 2, 3,
	// 4): their deletes are in those partitions, one file each; the row
	// inserted and moved in the flush is deleted from the flush's file.
	if len(deletes) != 5 {
		t.Errorf("public.ev has %d delete files, want 5 (one per partition of a deleted row)", len(deletes))
	}
	day2 := inspectPlans(t, tg, "public.ev", "created_at >= '2026-01-02T00:00:00+00:00' and created_at < '2026-01-03T00:00:00+00:00'")
	all := inspectPlans(t, tg, "public.ev", "n >= 0")
	t.Logf("one day: %s\nall: %s", day2, all)
	if planned(t, day2) >= planned(t, all) || planned(t, day2) == 0 {
		t.Errorf("a one-day scan plans %q, the full scan %q: want fewer, not none", day2, all)
	}
	tmParts := map[string]bool{}
	for _, f := range liveFilesOf(t, loadTable(t, tg, "public.tm")) {
		if f.content == icego.EntryContentData {
			tmParts[f.partition] = true
		}
	}
	if len(tmParts) != 7 { // 6 hours copied, the moved row's new hour
		t.Errorf("public.tm has %d data partitions, want 7: %v", len(tmParts), tmParts)
	}
	b.stop(t)

	// A spec another writer sets (as Spark's ALTER TABLE ... ADD PARTITION
	// FIELD does), the configuration unchanged: the bridge follows it.
	tm := loadTable(t, tg, "public.tm")
	txn := tm.NewTransaction()
	if err := txn.UpdateSpec(true).AddIdentity("v").Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A new spec from the configuration: day only.
	writeCfg(`["day(created_at)"]`)
	b = startBridge(t, nil, runArgs(pg, "part_pub", tg, "--config", cfg)...)
	exec1(t, conn, `INSERT INTO tm VALUES (7, '2026-01-01 00:00:00', '2024-06-15', '2025-01-10', 'seven')`)
	exec1(t, conn, `BEGIN;
		UPDATE ev SET created_at = created_at + interval '1 day' WHERE id IN (5, 6);
		DELETE FROM ev WHERE id = 7;
		INSERT INTO ev VALUES (300, '2026-01-01 05:00:00+00', 'us', 'new', 300);
		COMMIT`)
	waitCaughtUp(t, conn, "pg2iceberg_part_pub", b)
	b.stop(t)
	compareRows(t, "pyiceberg", "ev", "id", pyicebergRows(t, tg, "public.ev"), pgRows(t, conn, evCols, "ev"))
	ev = loadTable(t, tg, "public.ev")
	if spec := ev.Spec(); len(ev.Metadata().PartitionSpecs()) != 2 || spec.NumFields() != 1 {
		t.Errorf("public.ev has %d specs, current %s; want 2, day(created_at)", len(ev.Metadata().PartitionSpecs()), spec)
	}
	specs := map[[2]int]int{} // [content, spec] → files
	for _, f := range liveFilesOf(t, ev) {
		specs[[2]int{int(f.content), f.spec}]++
	}
	curSpec := ev.Spec()
	cur := curSpec.ID()
	// Rows 5 and 6 moved to two new days, row 300 on a third: three data
	// files under the new spec; rows 5, 6 and 7 deleted from copied files
	// of three partitions of spec 0: three more delete files there.
	if specs[[2]int{0, cur}] != 3 || specs[[2]int{1, 0}] != 5+3 || specs[[2]int{1, cur}] != 0 {
		t.Errorf("public.ev files by [content, spec]: %v; want 3 new data files under spec %d and 8 delete files under spec 0", specs, cur)
	}
	compareRows(t, "pyiceberg", "tm", "id", pyicebergRows(t, tg, "public.tm"), pgRows(t, conn, tmCols, "tm"))
	var tmNew []string
	for _, f := range liveFilesOf(t, loadTable(t, tg, "public.tm")) {
		if f.spec == 1 {
			tmNew = append(tmNew, f.partition)
		}
	}
	if len(tmNew) != 1 || !strings.Contains(tmNew[0], "v=seven") {
		t.Errorf("public.tm files under the spec set outside: %v, want one, of v=seven", tmNew)
	}
	got := duckdbRow(t, "SELECT count(*), sum(n), count(DISTINCT region) FROM iceberg_scan(?)", filepath.Join(tg.warehouse, "public.db", "ev"))
	var want string
	if err := conn.QueryRow(context.Background(), `SELECT '(' || count(*) || ', ' || sum(n) || ', ' || count(DISTINCT region) || ')' FROM ev`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("DuckDB iceberg_scan of public.ev = %s, want %s", got, want)
	}
	// maintain compacts the partitioned mirror with deletes (per spec and
	// partition, deletes applied), and the rows stay exact.
	if out, err := runOnce(t, append([]string{"maintain", "--table", "public.ev"}, tg.args()...)...); err != nil || !strings.Contains(out, "compaction: rewrote") {
		t.Errorf("maintain of public.ev: %v, want a compaction of the partitioned mirror:\n%s", err, out)
	} else {
		t.Logf("maintain:\n%s", out)
	}
	compareRows(t, "pyiceberg (after maintain)", "ev", "id", pyicebergRows(t, tg, "public.ev"), pgRows(t, conn, evCols, "ev"))
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))
	if rows, ok := spark.dump(t, "SELECT CAST(id AS STRING) AS id, CAST(unix_micros(created_at) AS STRING) AS us, region, name, CAST(n AS STRING) AS n FROM pg.public.ev"); ok {
		compareRows(t, "Spark SQL", "public.ev", "id", rows, pgRows(t, conn, "id::text AS id, ((extract(epoch FROM created_at) * 1000000)::bigint)::text AS us, region, name, n::text AS n", "ev"))
	}
	if rows, ok := spark.dump(t, "SELECT CAST(id AS STRING) AS id, CAST(d AS STRING) AS d, CAST(m AS STRING) AS m, v FROM pg.public.tm"); ok {
		compareRows(t, "Spark SQL", "public.tm", "id", rows, pgRows(t, conn, "id::text AS id, d::text AS d, m::text AS m, v", "tm"))
	}
}

// planned is the number of data files an inspect plan line says the scan
// plans.
func planned(t *testing.T, line string) int {
	t.Helper()
	var n int
	i := strings.Index(line, "the scan plans ")
	if i < 0 {
		t.Fatalf("not a plan line: %q", line)
	}
	if _, err := fmt.Sscanf(line[i:], "the scan plans %d", &n); err != nil {
		t.Fatalf("plan line %q: %v", line, err)
	}
	return n
}

// A one-day query on a mirror partitioned by day(created_at) plans one
// file per flush that wrote the day, where the same rows unpartitioned
// plan every file holding the day within its bounds: each flush's file
// spans the month. bench/pruning.sh prints the figures.
func TestDayPartitionPruning(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE ev_day (id int PRIMARY KEY, created_at timestamptz NOT NULL, v text);
		CREATE TABLE ev_flat (id int PRIMARY KEY, created_at timestamptz NOT NULL, v text);
		CREATE PUBLICATION prune_pub FOR TABLE ev_day, ev_flat;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.ev_day
    partition: ["day(created_at)"]
    compaction: {enabled: false}
  - table: public.ev_flat
    compaction: {enabled: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "prune_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_prune_pub", b)
	// Ten flushes, each of 3000 rows over 30 days.
	const flushes, days = 10, 30
	for i := range flushes {
		for _, tbl := range []string{"ev_day", "ev_flat"} {
			exec1(t, conn, fmt.Sprintf(`INSERT INTO %s SELECT g, '2026-01-01 00:00:00+00'::timestamptz + (g %% %d) * interval '1 day' + interval '1 hour', 'v' || g
				FROM generate_series(%d, %d) g`, tbl, days, i*3000+1, (i+1)*3000))
		}
		waitCaughtUp(t, conn, "pg2iceberg_prune_pub", b)
	}
	b.stop(t)
	where := "created_at >= '2026-01-10T00:00:00+00:00' and created_at < '2026-01-11T00:00:00+00:00'"
	dayPlan, flatPlan := inspectPlans(t, tg, "public.ev_day", where), inspectPlans(t, tg, "public.ev_flat", where)
	t.Logf("one-day query, day(created_at): %s", dayPlan)
	t.Logf("one-day query, unpartitioned:   %s", flatPlan)
	if got := planned(t, dayPlan); got != flushes {
		t.Errorf("day-partitioned: %d files planned, want %d (the day's file of each flush)", got, flushes)
	}
	if got := planned(t, flatPlan); got != flushes {
		t.Errorf("unpartitioned: %d files planned, want %d (every file)", got, flushes)
	}
	if !strings.Contains(dayPlan, fmt.Sprintf(" of %d data files", flushes*days)) || !strings.Contains(flatPlan, fmt.Sprintf(" of %d data files", flushes)) {
		t.Errorf("totals: %q and %q, want %d and %d data files", dayPlan, flatPlan, flushes*days, flushes)
	}
	compareRows(t, "pyiceberg", "ev_day", "id", pyicebergRows(t, tg, "public.ev_day"), pgRows(t, conn, "id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS created_at, v", "ev_day"))
}
