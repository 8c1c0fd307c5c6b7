package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// idleSQL adds a table to app_pub that no test writes to after its copy:
// its watermark stays below the slot's confirmed position, legitimately.
const idleSQL = `CREATE TABLE app.idle (id int PRIMARY KEY, v text);
	INSERT INTO app.idle SELECT g, 'v' || g FROM generate_series(1, 10) g;
	ALTER PUBLICATION app_pub ADD TABLE app.idle;`

// backupCatalog copies the SQLite catalog as it is (with what its WAL
// holds) and returns the copy's path.
func backupCatalog(t *testing.T, tg target) string {
	t.Helper()
	db, err := dbsql.Open("sqlite", tg.catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dst := filepath.Join(t.TempDir(), fmt.Sprintf("catalog-%d.db", time.Now().UnixNano()))
	if _, err := db.Exec(`VACUUM INTO ?`, dst); err != nil {
		t.Fatalf("back the catalog up: %v", err)
	}
	return dst
}

// restoreCatalog puts a backup back in place of the catalog.
func restoreCatalog(t *testing.T, tg target, backup string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(tg.catalog + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tg.catalog, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tenTransactions makes ten transactions on app.users, each streamed and
// committed by b before the next, and returns the rows they changed.
func tenTransactions(t *testing.T, conn *pgx.Conn, b *bridge, round int) int64 {
	t.Helper()
	var n int64
	for i := 1; i <= 10; i++ {
		switch i % 3 {
		case 0:
			n += exec1(t, conn, `DELETE FROM app.users WHERE id = $1`, round*10+i)
		case 1:
			n += exec1(t, conn, `INSERT INTO app.users VALUES ($1, 'new', 'row')`, 1000+round*10+i)
		default:
			n += exec1(t, conn, `UPDATE app.users SET b = $1 WHERE id <= $2`, fmt.Sprintf("round %d tx %d", round, i), i*3)
		}
		waitCaughtUp(t, conn, usersSlot, b) // a commit each
	}
	return n
}

func checkUsersEqual(t *testing.T, tg target, conn *pgx.Conn, step string) {
	t.Helper()
	want := pgRows(t, conn, `id::text AS id, a, b`, "app.users")
	compareRows(t, "pyiceberg "+step, "app.users", "id", pyicebergRows(t, tg, "app.users"), want)
	compareRows(t, "iceberg-go "+step, "app.users", "id", icegoRows(t, tg, "app.users"), want)
}

// Issue 15.2: a catalog put back from a copy taken 10 transactions
// earlier. run refuses to stream on top of it (that forked the tables'
// history and lost the rows in between), status flags the tables, repair
// proposes the fix, and after repair the mirror equals PostgreSQL and
// streaming goes on. The idle table, whose watermark is legitimately below
// the slot's position, is flagged nowhere. Then the same restore once more,
// taken out with --on-stale-table=recopy; repair afterwards does not point
// the catalog back at the older branch.
func TestRestoredCatalog(t *testing.T) {
	t.Parallel()
	restoredCatalog(t, localTarget(t), true)
}

// The same on S3, where the check lists each table's metadata with one
// request: refused, flagged, repaired.
func TestRestoredCatalogS3(t *testing.T) {
	t.Parallel()
	restoredCatalog(t, s3Target(t), false)
}

func restoredCatalog(t *testing.T, tg target, recopy bool) {
	conn, tg, common, run, b := startUsersAt(t, tg, idleSQL)
	want := exec1(t, conn, `UPDATE app.users SET b = 'before the backup' WHERE id <= 50`)
	waitCaughtUp(t, conn, usersSlot, b)
	b.stop(t)
	backup := backupCatalog(t, tg)

	b = startBridge(t, tg.env(), run...)
	waitSlot(t, conn, usersSlot, b)
	want += tenTransactions(t, conn, b, 1)
	b.stop(t)
	restoreCatalog(t, tg, backup)

	out, err := runOnceEnv(t, tg.env(), append([]string{"status"}, common...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, name := range []string{"app.users ", "app.users__changelog "} {
		if l := lastLine(out, name); !strings.Contains(l, "STALE") || !strings.Contains(l, "needs a human") {
			t.Errorf("status does not flag %s:\n%s", name, out)
		}
	}
	if strings.Contains(lastLine(out, "app.idle "), "STALE") || strings.Contains(lastLine(out, "app.idle__changelog"), "STALE") {
		t.Errorf("status flags the idle table:\n%s", out)
	}
	t.Logf("status:\n%s", out)

	b = startBridge(t, tg.env(), run...)
	b.exited(t, time.Minute)
	for _, w := range []string{"the catalog is behind", "app.users: the catalog points at", "app.users__changelog: the catalog points at",
		"pg2iceberg repair " + strings.Join(tg.args(), " ") + " app.users app.users__changelog", "--on-stale-table=recopy"} {
		if !strings.Contains(b.log(), w) {
			t.Fatalf("run on a restored catalog: the error does not say %q; log:\n%s", w, tail(b.log(), 20))
		}
	}
	if msg := b.log()[strings.Index(b.log(), "the catalog is behind"):]; strings.Contains(msg, "app.idle") {
		t.Errorf("run on a restored catalog names the idle table:\n%s", msg)
	}
	if strings.Contains(b.log(), "batch committed") {
		t.Errorf("run on a restored catalog committed:\n%s", tail(b.log(), 20))
	}

	tables := []string{"app.users", "app.users__changelog"}
	repair := append([]string{"repair"}, tg.args()...)
	out, err = runOnceEnv(t, tg.env(), slices.Concat(repair, []string{"--dry-run"}, tables)...)
	if err != nil || strings.Count(out, "would point the catalog at") != 2 {
		t.Fatalf("repair --dry-run: %v\n%s", err, out)
	}
	if out, err = runOnceEnv(t, tg.env(), append(repair, tables...)...); err != nil {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	b = startBridge(t, tg.env(), run...)
	waitSlot(t, conn, usersSlot, b)
	want += tenTransactions(t, conn, b, 2)
	b.stop(t)
	checkUsersEqual(t, tg, conn, "after repair")
	var changes int64
	for _, c := range pyicebergRows(t, tg, "app.users__changelog") {
		if c["op"] != "R" {
			changes++
		}
	}
	if changes != want {
		t.Errorf("changelog after repair has %d changes, want %d (every change, none lost or repeated)", changes, want)
	}

	if !recopy {
		return
	}
	// Once more, taken out by copying the tables again.
	restoreCatalog(t, tg, backup)
	b = startBridge(t, tg.env(), append(run, "--on-stale-table=recopy")...)
	waitSlot(t, conn, usersSlot, b)
	tenTransactions(t, conn, b, 3)
	b.stop(t)
	checkUsersEqual(t, tg, conn, "after --on-stale-table=recopy")
	// The tables are no longer behind: a start without the option streams.
	b = startBridge(t, tg.env(), run...)
	waitSlot(t, conn, usersSlot, b)
	b.stop(t)
	var resyncs int
	for _, c := range pyicebergRows(t, tg, "app.users__changelog") {
		if c["op"] == "R" {
			resyncs++
		}
	}
	if resyncs != 1 {
		t.Errorf("changelog has %d resync rows, want 1 (where the re-copy replaced the mirror)", resyncs)
	}
	out, err = runOnceEnv(t, tg.env(), slices.Concat(repair, []string{"--dry-run"}, tables)...)
	if err == nil || strings.Contains(out, "would point the catalog at") || !strings.Contains(out, "app.users: the newest metadata file") || !strings.Contains(out, "forked") {
		t.Errorf("repair after the re-copy (%v) does not refuse to point the catalog back at the older branch:\n%s", err, out)
	}
	t.Logf("repair after the re-copy:\n%s", out)
}

// A commit that failed, or was killed, leaves an orphan metadata file
// newer than the catalog's current one; its watermark was never
// acknowledged, so neither status nor the next start takes it for a
// restored catalog, and the start streams the changes again.
func TestFailedCommitIsNotStale(t *testing.T) {
	t.Parallel()
	conn, tg, common, run, b := startUsers(t, "")
	waitCaughtUp(t, conn, usersSlot, b)
	for _, kill := range []bool{false, true} {
		// Hold the catalog's write lock: the next flush writes its
		// metadata file, then cannot update the catalog.
		unlock := lockCatalog(t, tg)
		before := metadataFileCount(t, tg, "app.db/users__changelog")
		exec1(t, conn, `UPDATE app.users SET b = $1 WHERE id <= 7`, fmt.Sprintf("during the commit, kill %t", kill))
		if kill {
			deadline := time.Now().Add(time.Minute)
			for metadataFileCount(t, tg, "app.db/users__changelog") == before && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			_ = b.cmd.Process.Kill()
		}
		b.exited(t, 3*time.Minute)
		if !kill && (b.err == nil || !strings.Contains(b.log(), "locked")) {
			t.Fatalf("bridge: %v, want a failed commit; log:\n%s", b.err, tail(b.log(), 10))
		}
		if n := metadataFileCount(t, tg, "app.db/users__changelog"); n <= before {
			t.Fatalf("kill %t: the commit left no metadata file (%d before, %d after)", kill, before, n)
		}
		unlock()
		out, err := runOnce(t, append([]string{"status"}, common...)...)
		if err != nil || strings.Contains(out, "STALE") {
			t.Errorf("kill %t: status takes the orphan for a restored catalog (%v):\n%s", kill, err, out)
		}
		b = startBridge(t, nil, run...)
		waitSlot(t, conn, usersSlot, b)
		waitCaughtUp(t, conn, usersSlot, b)
		checkUsersEqual(t, tg, conn, fmt.Sprintf("after the commit (kill %t)", kill))
	}
	b.stop(t)
}

// lockCatalog takes the SQLite catalog's write lock until unlock is called.
func lockCatalog(t *testing.T, tg target) (unlock func()) {
	t.Helper()
	db, err := dbsql.Open("sqlite", tg.catalog)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := lock.ExecContext(context.Background(), `ROLLBACK`); err != nil {
			t.Fatal(err)
		}
		lock.Close()
		db.Close()
	}
}

// metadataFileCount counts a table's metadata files (dir is relative to
// the warehouse).
func metadataFileCount(t *testing.T, tg target, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tg.warehouse, dir, "metadata", "*.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}
