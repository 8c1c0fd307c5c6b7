package integration

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// withCatalog opens tg's catalog with iceberg-go (on S3 with the test
// server's keys, given to the catalog rather than set in the environment,
// so that tests on several S3 servers run in parallel), runs fn on it and
// closes it.
func withCatalog(t *testing.T, tg target, fn func(ctx context.Context, cat catalog.Catalog)) {
	t.Helper()
	ctx := context.Background()
	cc := iceberg.CatalogConfig{
		Warehouse: tg.warehouse, Catalog: tg.catalog,
		S3Endpoint: endpoint(tg), S3Region: "us-east-1", S3PathStyle: tg.s3 != nil,
	}
	if tg.s3 != nil {
		cc.S3AccessKeyID, cc.S3SecretAccessKey = tg.s3.AccessKey, tg.s3.SecretKey
	}
	cat, err := iceberg.OpenCatalog(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer iceberg.CloseCatalog(cat)
	fn(ctx, cat)
}

// icegoTable loads a table with iceberg-go from tg's catalog, on S3 too.
func icegoTable(t *testing.T, tg target, name string) *table.Table {
	t.Helper()
	var tbl *table.Table
	withCatalog(t, tg, func(ctx context.Context, cat catalog.Catalog) {
		ns, tb, _ := strings.Cut(name, ".")
		var err error
		if tbl, err = cat.LoadTable(ctx, table.Identifier{ns, tb}); err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
	})
	return tbl
}

// snapshotFiles returns the data and delete files the table's snapshots
// reference: every snapshot's, or only the current one's.
func snapshotFiles(t *testing.T, tbl *table.Table, currentOnly bool) map[string]icego.ManifestEntryContent {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	if currentOnly {
		snaps = nil
		if s := tbl.CurrentSnapshot(); s != nil {
			snaps = []table.Snapshot{*s}
		}
	}
	out := map[string]icego.ManifestEntryContent{}
	for _, s := range snaps {
		manifests, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			for e, err := range m.Entries(fsys, currentOnly) {
				if err != nil {
					t.Fatal(err)
				}
				out[e.DataFile().FilePath()] = e.DataFile().ContentType()
			}
		}
	}
	return out
}

// storedFiles lists the files under a table's data directory, as URIs
// like the manifests' (file:///... or s3://bucket/...).
func storedFiles(t *testing.T, tg target, tbl *table.Table) []string {
	t.Helper()
	loc := strings.TrimSuffix(tbl.Location(), "/") + "/data/"
	var out []string
	if tg.s3 == nil {
		dir := strings.TrimPrefix(loc, "file://")
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				out = append(out, "file://"+p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(out)
		return out
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	p := s3.NewListObjectsV2Paginator(tg.s3.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out = append(out, "s3://"+bucket+"/"+aws.ToString(o.Key))
		}
	}
	sort.Strings(out)
	return out
}

// unreferencedFiles returns the files under a table's data directory that
// no snapshot of it references.
func unreferencedFiles(t *testing.T, tg target, name string) (stored int, orphans []string) {
	t.Helper()
	tbl := icegoTable(t, tg, name)
	ref := snapshotFiles(t, tbl, false)
	files := storedFiles(t, tg, tbl)
	for _, f := range files {
		if _, ok := ref[f]; !ok {
			orphans = append(orphans, f)
		}
	}
	return len(files), orphans
}

// A streamed transaction is applied ahead of its commit into files of its
// own; one that aborts, or rolls a savepoint back after its changes were
// applied, leaves those files to nobody. They are deleted when the
// speculation is given up: afterwards every file under the tables' data
// directories is referenced by a snapshot (local and S3).
func TestAbandonedSpeculationFiles(t *testing.T) {
	t.Parallel()
	for _, mk := range []func(*testing.T) target{localTarget, s3Target} {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			pg := harness.StartPostgresT(t, harness.PostgresOptions{Settings: map[string]string{"logical_decoding_work_mem": "64kB"}})
			if err := pg.Exec(context.Background(), `CREATE TABLE big (id int PRIMARY KEY, v text);
				INSERT INTO big SELECT g, 'old' FROM generate_series(1, 1000) g;
				CREATE PUBLICATION big_pub FOR TABLE big;`); err != nil {
				t.Fatal(err)
			}
			conn := pgConn(t, pg)
			b := startBridge(t, tg.env(), runArgs(pg, "big_pub", tg)...)
			waitSlot(t, conn, "pg2iceberg_big_pub", b)
			ctx := context.Background()
			for _, end := range []string{"ROLLBACK", "ROLLBACK TO SAVEPOINT a; COMMIT"} {
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{
					"INSERT INTO big SELECT g, 'kept' FROM generate_series(100001, 120000) g",
					"SAVEPOINT a",
					"INSERT INTO big SELECT g, 'ahead' FROM generate_series(200001, 260000) g",
					"UPDATE big SET v = 'ahead' WHERE id <= 1000",
					end,
				} {
					if _, err := tx.Exec(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
			b.stop(t)
			if n := strings.Count(b.log(), `msg="streamed transaction will be applied at its commit"`); n < 2 {
				t.Fatalf("%d speculations given up, want 2; log:\n%s", n, tail(b.log(), 30))
			}
			for _, name := range []string{"public.big", "public.big__changelog"} {
				stored, orphans := unreferencedFiles(t, tg, name)
				if len(orphans) > 0 {
					t.Errorf("%s: %d of %d files under data/ are referenced by no snapshot: %v", name, len(orphans), stored, orphans)
				}
			}
			compareRows(t, "iceberg-go", "public.big", "id", icegoRows(t, tg, "public.big"), pgRows(t, conn, "id, v", "public.big"))
		})
	}
}

// A bridge killed with SIGKILL leaves its spool directory behind; the next
// start removes it, and only directories no live process holds: one a
// running process has locked stays. A clean stop removes the bridge's own
// directory and leaves the SQLite catalog checkpointed, with no WAL
// content, so that a copy of catalog.db alone holds the latest metadata.
func TestLeftoversAfterStop(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' FROM generate_series(1, 100) g;
		CREATE PUBLICATION t_pub FOR TABLE t;`)
	tg := localTarget(t)
	spool := t.TempDir()
	args := runArgs(pg, "t_pub", tg, "--spool-dir", spool)

	// A directory a live process owns: this test holds its lock.
	live := filepath.Join(spool, "pg2iceberg-spool-1")
	if err := os.Mkdir(live, 0o700); err != nil {
		t.Fatal(err)
	}
	lf, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	b := startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	killed := filepath.Join(spool, fmt.Sprintf("pg2iceberg-spool-%d", b.cmd.Process.Pid))
	if _, err := os.Stat(killed); err != nil {
		t.Fatalf("the bridge's spool directory: %v", err)
	}
	_ = b.cmd.Process.Kill()
	b.exited(t, time.Minute)

	b = startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	own := filepath.Join(spool, fmt.Sprintf("pg2iceberg-spool-%d", b.cmd.Process.Pid))
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed bridge's spool directory %s is still there after the next start (%v)", killed, err)
	}
	for _, dir := range []string{live, own} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("spool directory %s: %v", dir, err)
		}
	}
	exec1(t, conn, `UPDATE t SET v = 'new' WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the stopped bridge's spool directory %s is still there (%v)", own, err)
	}

	// The catalog after a clean stop: no WAL content, and catalog.db
	// alone points at the newest metadata file.
	if fi, err := os.Stat(tg.catalog + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("%s-wal holds %d bytes after a clean stop", tg.catalog, fi.Size())
	}
	backup := filepath.Join(t.TempDir(), "catalog.db")
	data, err := os.ReadFile(tg.catalog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backup, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t", "t__changelog"} {
		got := catalogMetadataLocation(t, backup, "public", name)
		hint, err := os.ReadFile(filepath.Join(tg.warehouse, "public.db", name, "metadata", "version-hint.text"))
		if err != nil {
			t.Fatal(err)
		}
		if want := string(hint) + ".metadata.json"; filepath.Base(got) != want {
			t.Errorf("a copy of catalog.db alone has public.%s at %s, want the newest metadata %s", name, filepath.Base(got), want)
		}
	}
}

// catalogMetadataLocation reads a table's metadata location from a SQLite
// catalog file (opened read-only, so that nothing is written to it).
func catalogMetadataLocation(t *testing.T, path, ns, name string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var loc string
	if err := db.QueryRow(`SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?`, ns, name).Scan(&loc); err != nil {
		t.Fatalf("%s: table %s.%s: %v", path, ns, name, err)
	}
	return loc
}

// A copy stopped halfway (SIGTERM during pg2iceberg backfill --table)
// deletes the files its writers wrote: no commit took them.
func TestAbandonedCopyFiles(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, repeat('v', 50) FROM generate_series(1, 1000000) g;
		CREATE PUBLICATION t_pub FOR TABLE t;`)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "t_pub"}, tg.args()...)
	b := startBridge(t, nil, append([]string{"run"}, common...)...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)

	b = startBridge(t, nil, append([]string{"backfill", "--table", "public.t", "--backfill-workers", "1"}, common...)...)
	// Wait for the copy's first file, not committed yet, then stop it.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, orphans := unreferencedFiles(t, tg, "public.t"); len(orphans) > 0 {
			break
		}
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("no copy file appeared; log:\n%s", tail(b.log(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	b.exited(t, time.Minute)
	if strings.Contains(b.log(), "table sync finished") {
		t.Fatalf("the copy finished before it was stopped; log:\n%s", tail(b.log(), 20))
	}
	if stored, orphans := unreferencedFiles(t, tg, "public.t"); len(orphans) > 0 {
		t.Errorf("after the stopped copy, %d of %d files under data/ are referenced by no snapshot: %v", len(orphans), stored, orphans)
	}
}
