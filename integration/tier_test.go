package integration

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/jackc/pgx/v5"
)

// tierSource is a table with a timestamp column: 1000 rows ten days old,
// copied at the start into one file whose rows are all older than a day.
const tierSource = `CREATE TABLE events (id int PRIMARY KEY, at timestamptz NOT NULL, n int, v text);
	INSERT INTO events SELECT g, now() - interval '10 days' + g * interval '1 second', g, 'old' || g FROM generate_series(1, 1000) g;
	CREATE PUBLICATION tier_pub FOR TABLE events;`

const tierCols = "id::text AS id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS at, n::text AS n, v"

// tierConfig writes a config file whose tables entry turns tiering on for
// public.events: rows older than a day move to cold.
func tierConfig(t *testing.T, cold string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	body := "tables:\n  - table: public.events\n    tiering:\n      column: at\n      cold_after: 24h\n      cold_location: " + cold + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// tierSplit returns the live data files of the mirror under root (cold)
// and elsewhere (hot), with the rows of each side and the newest upper
// bound of at among the cold files.
func tierSplit(t *testing.T, tg target, root string) (cold, hot []string, coldRows, hotRows int64, newestCold time.Time) {
	t.Helper()
	tbl := icegoTable(t, tg, "public.events")
	f, _ := tbl.Schema().FindFieldByName("at")
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mans {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			df := e.DataFile()
			if df.ContentType() != icego.EntryContentData {
				continue
			}
			if !strings.HasPrefix(df.FilePath(), root+"/") {
				hot, hotRows = append(hot, df.FilePath()), hotRows+df.Count()
				continue
			}
			cold, coldRows = append(cold, df.FilePath()), coldRows+df.Count()
			if b := df.UpperBoundValues()[f.ID]; len(b) == 8 {
				if at := time.UnixMicro(int64(binary.LittleEndian.Uint64(b))); at.After(newestCold) {
					newestCold = at
				}
			}
		}
	}
	return cold, hot, coldRows, hotRows, newestCold
}

// waitTiered inserts a recent row now and then (so that flushes, after
// which tiering is checked and installed, keep coming) until the mirror's
// cold files under root hold want rows.
func waitTiered(t *testing.T, tg target, conn *pgx.Conn, b *bridge, root string, want int64, next *int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, _, n, _, _ := tierSplit(t, tg, root); n >= want {
			return
		}
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("waiting for %d rows in cold files; log:\n%s", want, tail(b.log(), 30))
		}
		exec1(t, conn, `INSERT INTO events VALUES ($1, now(), $1, 'new')`, *next)
		*next++
		time.Sleep(300 * time.Millisecond)
	}
}

// checkTiered requires the mirror's cold files, under root, to hold only
// rows older than a day and at least min rows, and every reader to see
// Postgres's rows.
func checkTiered(t *testing.T, tg target, conn *pgx.Conn, root string, minCold int64, what string) {
	t.Helper()
	cold, hot, coldRows, hotRows, newest := tierSplit(t, tg, root)
	t.Logf("%s: %d cold files (%d rows, newest %s), %d hot files (%d rows)", what, len(cold), coldRows, newest.UTC().Format(time.RFC3339), len(hot), hotRows)
	if len(cold) == 0 || coldRows < minCold {
		t.Errorf("%s: %d cold files with %d rows under %s, want at least %d rows", what, len(cold), coldRows, root, minCold)
	}
	if newest.After(time.Now().Add(-24 * time.Hour)) {
		t.Errorf("%s: a cold file holds a row of %s, newer than the threshold (a day)", what, newest)
	}
	want := pgRows(t, conn, tierCols, "events")
	compareRows(t, "iceberg-go "+what, "events", "id", icegoRows(t, tg, "public.events"), want)
	compareRows(t, "pyiceberg "+what, "events", "id", pyicebergRows(t, tg, "public.events"), want)
}

// Tiering on a local warehouse with the cold location in another
// directory: the copied old rows and a streamed batch of old rows move
// cold, recent rows stay; pyiceberg, iceberg-go, Spark and DuckDB read the
// mirror as Postgres has it; updates and deletes of cold rows then stream
// in exactly, and so they do after a restart.
func TestTieringLocal(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, tierSource)
	tg := localTarget(t)
	coldDir := filepath.Join(t.TempDir(), "cold")
	root := "file://" + coldDir + "/public/events"
	run := runArgs(pg, "tier_pub", tg, "--flush-interval", "1s", "--config", tierConfig(t, coldDir))
	addr := freeAddr(t)
	b := startBridge(t, nil, append(run, "--metrics-addr", addr)...)
	waitSlot(t, conn, "pg2iceberg_tier_pub", b)
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, sparkJar(t))
	next := 100000
	// A batch of old rows streamed in one flush: a hot file of old rows.
	exec1(t, conn, `INSERT INTO events SELECT g, now() - interval '5 days', g, 'old streamed' FROM generate_series(2001, 2300) g`)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	waitTiered(t, tg, conn, b, root, 1300, &next)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	checkTiered(t, tg, conn, root, 1300, "after tiering")
	_, body := httpGet(t, "http://"+addr+"/metrics", "")
	for _, want := range []string{`pg2iceberg_table_tier_bytes{table="public.events",tier="cold"} `, "pg2iceberg_tierings_total "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	// Updates and deletes of cold rows reach them through the key index.
	exec1(t, conn, `UPDATE events SET n = -n, v = 'cold updated' WHERE id % 3 = 0 AND id <= 1000`)
	exec1(t, conn, `DELETE FROM events WHERE id % 5 = 0 AND (id <= 1000 OR id BETWEEN 2001 AND 2300)`)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	checkTiered(t, tg, conn, root, 500, "after cold updates")
	if got, ok := spark.dump(t, "SELECT id, n, v FROM pg.public.events"); ok {
		compareRows(t, "Spark SQL", "events", "id", got, pgRows(t, conn, "id::text AS id, n::text AS n, v", "events"))
	}
	dir := filepath.Join(mustAbs(t, tg.warehouse), "public.db", "events")
	var pgSum string
	if err := conn.QueryRow(context.Background(), `SELECT '(' || count(*) || ', ' || sum(n) || ')' FROM events`).Scan(&pgSum); err != nil {
		t.Fatal(err)
	}
	if got := duckdbRow(t, "SELECT count(*), sum(n) FROM iceberg_scan(?)", dir); got != pgSum {
		t.Errorf("duckdb iceberg_scan of the tiered mirror = %s, want %s", got, pgSum)
	}

	noCompactionTrouble(t, b.log())

	// A restart keeps it exact, and later changes of cold rows too.
	b.stop(t)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_tier_pub", b)
	exec1(t, conn, `UPDATE events SET v = 'after restart' WHERE id % 7 = 0 AND id <= 1000`)
	exec1(t, conn, `DELETE FROM events WHERE id % 11 = 0 AND id <= 1000`)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	checkTiered(t, tg, conn, root, 500, "after restart")
	noCompactionTrouble(t, b.log())
}

// Tiering on S3 (versitygw) into another bucket: the bridge writes cold
// files there and reads them back (the key index, cold-row updates),
// pyiceberg reads both buckets; maintain's orphan cleanup removes an
// unreferenced file in the cold root and keeps the referenced ones.
func TestTieringS3(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, tierSource)
	tg := s3Target(t)
	ctx := context.Background()
	if err := tg.s3.CreateBucket(ctx, "cold"); err != nil {
		t.Fatal(err)
	}
	root := "s3://cold/tier/public/events"
	run := runArgs(pg, "tier_pub", tg, "--flush-interval", "1s", "--config", tierConfig(t, "s3://cold/tier"))
	b := startBridge(t, tg.env(), run...)
	waitSlot(t, conn, "pg2iceberg_tier_pub", b)
	next := 100000
	waitTiered(t, tg, conn, b, root, 1000, &next)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	checkTiered(t, tg, conn, root, 1000, "S3 after tiering")
	exec1(t, conn, `UPDATE events SET n = -n, v = 'cold updated' WHERE id % 3 = 0 AND id <= 1000`)
	exec1(t, conn, `DELETE FROM events WHERE id % 5 = 0 AND id <= 1000`)
	waitCaughtUp(t, conn, "pg2iceberg_tier_pub", b)
	noCompactionTrouble(t, b.log())
	b.stop(t)
	checkTiered(t, tg, conn, root, 500, "S3 after cold updates")

	orphan := "tier/public/events/data/planted.parquet"
	if err := tg.s3.PutObject(ctx, "cold", orphan, []byte("PAR1 not referenced PAR1")); err != nil {
		t.Fatal(err)
	}
	m := startBridge(t, tg.env(), append([]string{"maintain", "--orphans-older-than", "0s", "--config", tierConfig(t, "s3://cold/tier")}, tg.args()...)...)
	m.exited(t, 2*time.Minute)
	if m.err != nil {
		t.Fatalf("maintain: %v\n%s", m.err, m.log())
	}
	if _, err := tg.s3.GetObject(ctx, "cold", orphan); err == nil {
		t.Errorf("orphan s3://cold/%s still there after maintain:\n%s", orphan, m.log())
	}
	checkTiered(t, tg, conn, root, 500, "S3 after maintain")
}
