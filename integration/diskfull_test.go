package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of size (mount's syntax: 4m) at a new directory
// and returns it; grow gives it more room, as an operator freeing space
// would. Mounting needs root, which CI has (scripts/setup.sh runs as
// root); elsewhere the test says so and is skipped.
func smallDisk(t *testing.T, size string) (dir string, grow func(size string)) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a full disk needs a small file system: mount -t tmpfs failed (%v: %s); run the test as root", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir, func(size string) {
		if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount %s: %v: %s", dir, err, out)
		}
	}
}

// A local warehouse (data files, metadata and the embedded catalog) and the
// spool directory fill up while the bridge streams. It must say so in its
// log and /healthz, acknowledge nothing that is not written, and go on by
// itself, in the same process, once space is freed: at the end the mirror
// equals Postgres and the changelog holds each committed change once.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	r := startDiskFullRun(t, false)
	ctx := context.Background()

	// About 12 MB of poorly compressible text into a 6 MB warehouse.
	for i := 0; i < 6; i++ {
		r.changes["a"] += exec1(t, r.conn, `INSERT INTO a SELECT g, (SELECT string_agg(md5(random()::text || g || s), '') FROM generate_series(1, 64) s)
			FROM generate_series($1::int, $1::int + 999) g`, 1000+i*1000)
	}
	line := r.waitLog(t, "disk full")
	code, health := httpGet(t, "http://"+r.addr+"/healthz", "")
	if code == 200 || !strings.Contains(health, "disk full") {
		t.Errorf("/healthz with a full disk: %d %q, want a failure that says disk full", code, health)
	}
	// Nothing acknowledged that is not written: the slot has not moved past
	// what the tables hold (checked in the end, when the changes the slot
	// still holds must all arrive exactly once).
	var confirmed string
	if err := r.conn.QueryRow(ctx, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, reconnectSlot).Scan(&confirmed); err != nil {
		t.Fatal(err)
	}
	t.Logf("disk full; slot confirmed at %s; the bridge logged:\n%s", confirmed, line)
	r.grow("512m")

	r.finish(t, 0, "disk full: nothing after the durable position is acknowledged")
}

// The spool directory fills up while a large transaction is streamed
// (logical_decoding_work_mem is 64kB, so the server sends it while it is
// open and the bridge spools it): the same, for the spool.
func TestDiskFullSpool(t *testing.T) {
	t.Parallel()
	r := startDiskFullRun(t, true)
	r.bigTx(t, size(20_000, 100_000), nil)
	t.Logf("the bridge logged:\n%s", r.waitLog(t, "disk full"))
	r.grow("512m")
	r.finish(t, 0, "disk full: nothing after the durable position is acknowledged")
}

// startDiskFullRun is startReconnect with a small file system under the
// warehouse (6 MB), or under the spool directory (1 MB) when spool is set.
func startDiskFullRun(t *testing.T, spool bool) *diskFullRun {
	t.Helper()
	settings, size := map[string]string(nil), "6m"
	if spool {
		settings, size = map[string]string{"logical_decoding_work_mem": "64kB"}, "1m"
	}
	disk, grow := smallDisk(t, size)
	pg, conn := startSourceWith(t, settings, reconnectSchema)
	r := &reconnectRun{pg: pg, conn: conn, tg: localTarget(t), addr: freeAddr(t), changes: map[string]int64{}}
	extra := []string{"--metrics-addr", r.addr}
	if spool {
		extra = append(extra, "--spool-dir", disk)
	} else {
		r.tg = target{name: "local", warehouse: filepath.Join(disk, "warehouse"), catalog: filepath.Join(disk, "warehouse", "catalog.db")}
	}
	r.b = startBridge(t, nil, runArgs(pg, "rc_pub", r.tg, extra...)...)
	waitSlot(t, conn, reconnectSlot, r.b)
	r.pid = r.b.cmd.Process.Pid
	return &diskFullRun{reconnectRun: r, grow: grow}
}

type diskFullRun struct {
	*reconnectRun
	grow func(size string)
}

// waitLog waits until the bridge's log holds s, failing if the bridge
// exits, and returns the first line that holds it.
func (r *reconnectRun) waitLog(t *testing.T, s string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, l := range strings.Split(r.b.log(), "\n") {
			if strings.Contains(l, s) {
				return l
			}
		}
		if !r.b.running() {
			t.Fatalf("bridge exited (%v) before logging %q; log:\n%s", r.b.err, s, tail(r.b.log(), 40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("bridge did not log %q within 2 minutes; log:\n%s", s, tail(r.b.log(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
