package replication

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A spool directory nobody holds (its process died) is removed when a
// spool is created; one whose process lives (it holds the lock) stays,
// and so does a directory that is not a spool's.
func TestNewSpoolRemovesStale(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "123"), []byte("spooled"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale, live, other := mk(spoolPrefix+"99999999"), mk(spoolPrefix+"1"), mk("pg2iceberg-other")
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	sp, err := newSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sp.stale != 1 {
		t.Errorf("newSpool removed %d stale directories, want 1", sp.stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s: %v, want it removed", stale, err)
	}
	for _, p := range []string{live, other, sp.dir} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
	// Our own directory is locked: another process's start keeps it.
	if n := removeStaleSpools(dir); n != 0 {
		t.Errorf("removeStaleSpools with every spool held removed %d", n)
	}
	sp.close()
	if _, err := os.Stat(sp.dir); !os.IsNotExist(err) {
		t.Errorf("%s after close: %v, want it removed", sp.dir, err)
	}
}
