package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An idle publication must not hold WAL back: with writes only to an
// unpublished table, the slot's confirmed_flush_lsn keeps advancing.
func TestIdlePublicationAdvancesSlot(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, shopSchema)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "shop_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_shop_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	start := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_shop_pub'")
	for i := 0; i < 20; i++ {
		exec1(t, conn, "INSERT INTO shop.unpublished (v) SELECT repeat('x', 100) FROM generate_series(1, 500)")
		time.Sleep(100 * time.Millisecond)
	}
	target := lsnOf(t, conn, "SELECT pg_current_wal_insert_lsn()::text")
	waitCaughtUp(t, conn, "pg2iceberg_shop_pub", b)
	end := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'pg2iceberg_shop_pub'")
	if end < target || end <= start {
		t.Fatalf("confirmed_flush_lsn moved from %s to %s; want at least %s", start, end, target)
	}
	t.Logf("confirmed_flush_lsn advanced from %s to %s with only unpublished writes", start, end)
	b.stop(t)
}

// A single 1,000,000-row transaction arrives complete (streamed by the
// server, spooled to disk and applied ahead of its commit) and the bridge's
// peak RSS stays under 512 MiB. make test sends 100,000 rows, streamed as
// well: the server streams past 4 MB (logical_decoding_work_mem) there,
// 64 MB (the default) under make test-long.
func TestLargeTransaction(t *testing.T) {
	t.Parallel()
	rows := size(100_000, 1_000_000)
	var settings map[string]string
	if !long {
		settings = map[string]string{"logical_decoding_work_mem": "4MB"}
	}
	pg, conn := startSourceWith(t, settings, `CREATE TABLE big (id int PRIMARY KEY, v text, n bigint, at timestamptz);
		CREATE PUBLICATION big_pub FOR TABLE big;`)
	tg := localTarget(t)
	spoolDir := t.TempDir()
	b := startBridge(t, nil, runArgs(pg, "big_pub", tg, "--spool-dir", spoolDir)...)
	waitSlot(t, conn, "pg2iceberg_big_pub", b)
	spooled := watchSpool(filepath.Join(spoolDir, fmt.Sprintf("pg2iceberg-spool-%d", b.cmd.Process.Pid)))
	exec1(t, conn, "INSERT INTO big SELECT g, 'value ' || g, g * 7, now() FROM generate_series(1, $1) g", rows)
	waitCaughtUp(t, conn, "pg2iceberg_big_pub", b)
	hwm := peakRSS(t, b.cmd.Process.Pid)
	b.stop(t)
	// Each row is at least its 4-byte id and 'value n' on disk.
	spoolPeak := spooled()
	if spoolPeak < int64(rows)*10 {
		t.Errorf("the spool held at most %d bytes, want at least %d: the transaction was not spooled to disk", spoolPeak, rows*10)
	}
	if !strings.Contains(b.log(), "streamed transaction applied ahead") {
		t.Fatalf("the transaction did not arrive streamed and was not applied ahead of its commit; log:\n%s", tail(b.log(), 20))
	}
	got := icegoRows(t, tg, "public.big")
	if len(got) != rows {
		t.Fatalf("mirror has %d rows, want %d", len(got), rows)
	}
	seen := make(map[string]bool, rows)
	for _, r := range got {
		seen[r["id"].(string)] = true
	}
	if len(seen) != rows {
		t.Fatalf("mirror has %d distinct ids, want %d", len(seen), rows)
	}
	t.Logf("%d-row transaction: mirror complete; spool peak %d MiB; bridge peak RSS %d MiB", rows, spoolPeak>>20, hwm>>20)
	if hwm > 512<<20 {
		t.Errorf("peak RSS %d MiB, want under 512 MiB", hwm>>20)
	}
}

// watchSpool polls a spool directory until the returned function is
// called, which returns the largest spool file size seen.
func watchSpool(dir string) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if info, err := e.Info(); err == nil && info.Size() > peak.Load() {
					peak.Store(info.Size())
				}
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() int64 { close(done); <-stopped; return peak.Load() }
}

// peakRSS reads VmHWM of a live process.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
