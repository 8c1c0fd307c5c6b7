package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

// partitionedFiles counts the live data and delete files of a table, and
// checks that every file of one spec holds partition values.
func partitionedFiles(t *testing.T, tg target, name string) (data, deletes int) {
	t.Helper()
	for _, f := range liveFilesOf(t, loadTable(t, tg, name)) {
		if f.partition == "" || strings.Contains(f.partition, "<nil>") {
			t.Errorf("%s: file %s has partition %q", name, filepath.Base(f.path), f.partition)
		}
		if f.content == icego.EntryContentData {
			data++
		} else {
			deletes++
		}
	}
	return data, deletes
}

// untilCompacted runs step(i) for i from first on until b's log has n
// compactions of mirror installed, failing past i = last.
func untilCompacted(t *testing.T, b *bridge, mirror string, n, first, last int, step func(i int)) {
	t.Helper()
	for i := first; strings.Count(b.log(), `msg="compaction installed" table=`+mirror+` `) < n; i++ {
		step(i)
		if i > last {
			t.Fatalf("no %d compactions of %s installed; log:\n%s", n, mirror, tail(b.log(), 30))
		}
	}
}

// A day-partitioned mirror with updates that move rows between days and
// deletes, over many flushes, is compacted with its deletes applied: by
// pg2iceberg maintain with the bridge stopped, then by the bridge's own
// compaction while it streams, rows moving across partitions all along.
// Each compaction leaves fewer live files, the deletes of files it did not
// rewrite and those the stream committed meanwhile in their own
// partitions, and pyiceberg and iceberg-go read what PostgreSQL holds.
func TestPartitionedCompaction(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE ev (id int PRIMARY KEY, created_at timestamptz NOT NULL, v text);
		INSERT INTO ev SELECT g, '2026-01-01 00:00:00+00'::timestamptz + (g % 3) * interval '1 day', 'v' || g FROM generate_series(1, 3000) g;
		CREATE PUBLICATION pcomp_pub FOR TABLE ev;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	writeCfg := func(compact string) {
		if err := os.WriteFile(cfg, []byte(`tables:
  - table: public.ev
    partition: ["day(created_at)"]
    compaction: `+compact+`
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("{enabled: false}")
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "pcomp_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_pcomp_pub", b)
	cols := "id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS created_at, v"
	// Each flush moves a slice of rows a day on (into another partition),
	// updates others in place, deletes some and inserts new ones.
	move := func(i int) {
		exec1(t, conn, fmt.Sprintf(`BEGIN;
			UPDATE ev SET created_at = created_at + interval '1 day', v = 'moved %[1]d' WHERE id %% 10 = %[2]d;
			UPDATE ev SET v = 'kept %[1]d' WHERE id %% 10 = %[3]d;
			DELETE FROM ev WHERE id %% 97 = %[1]d;
			INSERT INTO ev SELECT g, '2026-01-01 00:00:00+00'::timestamptz + (g %% 4) * interval '1 day', 'new' FROM generate_series(%[4]d, %[4]d + 99) g;
			COMMIT`, i, i%10, (i+5)%10, 10000+i*100))
	}
	for i := range 6 {
		move(i)
		waitCaughtUp(t, conn, "pg2iceberg_pcomp_pub", b)
	}
	b.stop(t)
	want := pgRows(t, conn, cols, "ev")
	compareRows(t, "pyiceberg", "ev before compaction", "id", pyicebergRows(t, tg, "public.ev"), want)
	data0, dels0 := partitionedFiles(t, tg, "public.ev")

	out, err := runOnce(t, append([]string{"maintain", "--table", "public.ev"}, tg.args()...)...)
	data1, dels1 := partitionedFiles(t, tg, "public.ev")
	t.Logf("maintain: %d data and %d delete files → %d and %d:\n%s", data0, dels0, data1, dels1, out)
	if err != nil || !strings.Contains(out, "compaction: rewrote") || data1+dels1 >= data0+dels0 {
		t.Fatalf("maintain: %v, live files %d+%d → %d+%d; want fewer; output:\n%s", err, data0, dels0, data1, dels1, out)
	}
	compareRows(t, "pyiceberg", "ev compacted by maintain", "id", pyicebergRows(t, tg, "public.ev"), want)
	compareRows(t, "iceberg-go", "ev compacted by maintain", "id", icegoRows(t, tg, "public.ev"), want)

	// The bridge's own compaction, while rows keep moving across days.
	writeCfg("{min_input_files: 4}")
	b = startBridge(t, nil, runArgs(pg, "pcomp_pub", tg, "--flush-interval", "1s", "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_pcomp_pub", b)
	untilCompacted(t, b, "public.ev", 2, 6, 60, func(i int) {
		move(i % 97)
		waitCaughtUp(t, conn, "pg2iceberg_pcomp_pub", b)
	})
	move(50)
	waitCaughtUp(t, conn, "pg2iceberg_pcomp_pub", b)
	b.stop(t)
	if strings.Contains(b.log(), "compaction failed") || strings.Contains(b.log(), "compaction not installed") || strings.Contains(b.log(), "key index does not match") {
		t.Errorf("compaction trouble: %s", tail(b.log(), 20))
	}
	t.Logf("bridge compaction: %s", lastLine(b.log(), "compaction installed"))
	want = pgRows(t, conn, cols, "ev")
	compareRows(t, "pyiceberg", "ev compacted by the bridge", "id", pyicebergRows(t, tg, "public.ev"), want)
	compareRows(t, "iceberg-go", "ev compacted by the bridge", "id", icegoRows(t, tg, "public.ev"), want)
	partitionedFiles(t, tg, "public.ev")
}
