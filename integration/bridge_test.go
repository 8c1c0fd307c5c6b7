// Package integration holds the end-to-end tests: a throwaway PostgreSQL,
// a real S3-compatible server (versitygw), the pg2iceberg binary as a child
// process, and readers nobody here wrote (pyiceberg, iceberg-go's scanner).
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pg2iceberg-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "pg2iceberg")
	raceBin.path = filepath.Join(dir, "pg2iceberg-race")
	if expr := os.Getenv("PG2ICEBERG_RACE_TESTS"); expr != "" {
		if raceTests, err = regexp.Compile(expr); err != nil {
			fmt.Fprintln(os.Stderr, "PG2ICEBERG_RACE_TESTS:", err)
			os.Exit(2)
		}
	}
	// failpoints: the crash tests set PG2ICEBERG_TEST_CRASH (see
	// iceberg/crash_failpoints.go), which only such a build reads.
	build := exec.Command("go", buildArgs(binPath, race)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build pg2iceberg:", err)
		os.Exit(1)
	}
	if coverDir != "" {
		// Every process started from here on inherits it: each bridge
		// that exits (not one killed) writes its counters there.
		if err := os.Setenv("GOCOVERDIR", coverDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	stopSpark()
	stopPyiceberg()
	removeTestCA()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// coverDir, from PG2ICEBERG_COVERDIR (make test sets it), has the bridge
// built with coverage of every package of the module; make test merges
// the counters the bridges write there with the unit tests' (go tool
// covdata percent).
var coverDir = os.Getenv("PG2ICEBERG_COVERDIR")

// race, from PG2ICEBERG_RACE (make race sets it), has the bridge built
// with the race detector: a data race it sees ends the process (exit 66)
// and fails the test that started it.
var race = os.Getenv("PG2ICEBERG_RACE") == "1"

// raceTests, from PG2ICEBERG_RACE_TESTS (make test sets it), are the
// top-level tests whose bridges alone are built with the race detector,
// in a run of every test: the race binary is built when the first of
// them starts a bridge, while the other tests run.
var raceTests *regexp.Regexp

// raceBin is the bridge built with the race detector for raceTests.
var raceBin struct {
	once sync.Once
	path string
	err  error
}

// bridgeBin is the binary of t's bridges, and whether it has the race
// detector.
func bridgeBin(t *testing.T) (string, bool) {
	t.Helper()
	root, _, _ := strings.Cut(t.Name(), "/")
	if race || raceTests == nil || !raceTests.MatchString(root) {
		return binPath, race
	}
	raceBin.once.Do(func() {
		build := exec.Command("go", buildArgs(raceBin.path, true)...)
		if out, err := build.CombinedOutput(); err != nil {
			raceBin.err = fmt.Errorf("build pg2iceberg with -race: %w\n%s", err, out)
		}
	})
	if raceBin.err != nil {
		t.Fatal(raceBin.err)
	}
	return raceBin.path, true
}

func buildArgs(out string, withRace bool) []string {
	args := []string{"build", "-tags", "failpoints", "-o", out}
	if withRace {
		args = append(args, "-race")
	}
	if coverDir != "" {
		args = append(args, "-cover", "-coverpkg=github.com/pg2iceberg/pg2iceberg/...")
	}
	return append(args, "..")
}

// long, from PG2ICEBERG_LONG (make test-long sets it), runs the heavy
// tests at full size; make test runs them in a short form that makes the
// same assertions on less data.
var long = os.Getenv("PG2ICEBERG_LONG") != ""

// size is full under make test-long and short otherwise.
func size(short, full int) int {
	if long {
		return full
	}
	return short
}

// target is where a test's bridge writes.
type target struct {
	name      string
	warehouse string // --warehouse
	catalog   string // SQLite catalog file
	s3        *harness.S3
}

func (tg target) args() []string {
	a := []string{"--warehouse", tg.warehouse, "--catalog", tg.catalog}
	if tg.s3 != nil {
		a = append(a, "--s3-endpoint", tg.s3.Endpoint, "--s3-region", tg.s3.Region, "--s3-path-style")
	}
	return a
}

// runArgs is the usual run command line: pg's superuser on database
// postgres, the publication pub, a flush every second, into tg; extra
// flags come after.
func runArgs(pg *harness.Postgres, pub string, tg target, extra ...string) []string {
	a := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", pub, "--flush-interval", "1s"}, extra...)
	return append(a, tg.args()...)
}

func (tg target) env() []string {
	if tg.s3 == nil {
		return nil
	}
	return tg.s3.Env()
}

func localTarget(t *testing.T) target {
	dir := t.TempDir()
	return target{name: "local", warehouse: filepath.Join(dir, "warehouse"), catalog: filepath.Join(dir, "warehouse", "catalog.db")}
}

func s3Target(t *testing.T) target {
	s3 := harness.StartS3T(t)
	if err := s3.CreateBucket(context.Background(), "lake"); err != nil {
		t.Fatal(err)
	}
	return target{name: "s3", warehouse: "s3://lake/wh", catalog: filepath.Join(t.TempDir(), "catalog.db"), s3: s3}
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bridge is a running pg2iceberg process; its log is its stdout and
// stderr.
type bridge struct {
	cmd *exec.Cmd
	lockedBuffer
	done chan struct{}
	err  error
}

func startBridge(t *testing.T, env []string, args ...string) *bridge {
	t.Helper()
	b := &bridge{done: make(chan struct{})}
	bin, raced := bridgeBin(t)
	b.cmd = exec.Command(bin, args...)
	b.cmd.Env = append(os.Environ(), env...)
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			// SIGTERM first, so that a bridge still running (a serve) ends
			// as it would and writes its coverage counters.
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-b.done:
			case <-time.After(5 * time.Second):
				_ = b.cmd.Process.Kill()
				<-b.done
			}
		}
		if log := b.log(); raced && strings.Contains(log, "WARNING: DATA RACE") {
			// Also from a bridge that was killed before its exit status
			// could say so.
			i := strings.Index(log, "WARNING: DATA RACE")
			t.Errorf("the race detector found a data race in the bridge:\n%s", log[i:min(len(log), i+6000)])
		}
		if t.Failed() {
			t.Logf("bridge log:\n%s", tail(b.log(), 60))
		}
	})
	return b
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stop sends SIGTERM and requires a clean exit.
func (b *bridge) stop(t *testing.T) {
	t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("bridge did not stop within 2 minutes after SIGTERM")
	}
	if b.err != nil {
		t.Fatalf("bridge exited with %v after SIGTERM; log:\n%s", b.err, tail(b.log(), 40))
	}
}

// exited waits for the process to die on its own (crash tests).
func (b *bridge) exited(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(within):
		t.Fatalf("bridge still running after %v; log:\n%s", within, tail(b.log(), 40))
	}
}

// crashed waits for the bridge to die at its armed crash point: a SIGKILL
// it sent itself, not any other exit (an error would pass for a crash).
func (b *bridge) crashed(t *testing.T, within time.Duration) {
	t.Helper()
	b.exited(t, within)
	if b.err == nil || !strings.Contains(b.err.Error(), "killed") {
		t.Fatalf("bridge exited with %v, want a SIGKILL at its crash point; log:\n%s", b.err, tail(b.log(), 40))
	}
}

func (b *bridge) running() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// writeLoad runs step(i) for i = 0, 1, ... on a connection of its own,
// pausing between steps, until the returned stop is called; stop waits for
// the load to end. A failing step fails the test and ends the load.
func writeLoad(t *testing.T, pg *harness.Postgres, pause time.Duration, step func(ctx context.Context, c *pgx.Conn, i int) error) (stop func()) {
	t.Helper()
	ctx := context.Background()
	lc, err := pg.Conn(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer lc.Close(ctx)
		for i := 0; !done.Load(); i++ {
			if err := step(ctx, lc, i); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(pause)
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// startSource starts a throwaway Postgres, runs sql in it and connects.
func startSource(t *testing.T, sql string) (*harness.Postgres, *pgx.Conn) {
	t.Helper()
	return startSourceWith(t, nil, sql)
}

// startSourceWith is startSource with extra postgresql.conf settings.
func startSourceWith(t *testing.T, settings map[string]string, sql string) (*harness.Postgres, *pgx.Conn) {
	t.Helper()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{Settings: settings})
	if err := pg.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
	return pg, pgConn(t, pg)
}

func pgConn(t *testing.T, pg *harness.Postgres) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec1(t *testing.T, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

func lsnOf(t *testing.T, conn *pgx.Conn, sql string, args ...any) pglogrepl.LSN {
	t.Helper()
	var s *string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return 0
	}
	l, err := pglogrepl.ParseLSN(*s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitCaughtUp waits until the slot has acknowledged everything written so
// far: every change is committed to Iceberg. The bridge exiting first fails
// the test.
func waitCaughtUp(t *testing.T, conn *pgx.Conn, slot string, b *bridge) {
	t.Helper()
	if !waitAcked(t, conn, slot, b) {
		t.Fatalf("bridge exited (%v) before catching up; log:\n%s", b.err, tail(b.log(), 40))
	}
}

// waitCommittedOrExit is waitCaughtUp that returns when the bridge exits
// first (a test's crash point).
func waitCommittedOrExit(t *testing.T, conn *pgx.Conn, slot string, b *bridge) {
	t.Helper()
	waitAcked(t, conn, slot, b)
}

// waitAcked waits until the slot has acknowledged everything written so
// far (true) or the bridge b (may be nil) has exited (false); 3 minutes at
// most.
func waitAcked(t *testing.T, conn *pgx.Conn, slot string, b *bridge) bool {
	t.Helper()
	want := lsnOf(t, conn, "SELECT pg_current_wal_insert_lsn()::text")
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot) >= want {
			return true
		}
		if b != nil && !b.running() {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("slot %s did not reach %s within 3 minutes", slot, want)
	return false
}

// waitReceived waits until the bridge serving metrics at addr has received
// everything committed so far, not necessarily committed it to Iceberg. It
// emits a non-transactional logical message, which pgoutput sends at once
// with its own end LSN, after everything before it in the WAL; the bridge
// ignores it (unsigned) but counts it in pg2iceberg_received_lsn.
func waitReceived(t *testing.T, addr string, conn *pgx.Conn, b *bridge) {
	t.Helper()
	marker := lsnOf(t, conn, "SELECT pg_logical_emit_message(false, 'pg2iceberg-test-marker', '')::text")
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if pglogrepl.LSN(metricValue(t, addr, "pg2iceberg_received_lsn")) >= marker {
			return
		}
		if !b.running() {
			t.Fatalf("bridge exited (%v) before receiving %s; log:\n%s", b.err, marker, tail(b.log(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the bridge did not receive the marker message at %s within a minute", marker)
}

// row is a row in canonical text form: column → text (nil for NULL).
type row map[string]any

func rowsKey(rows []row, key string) map[string]row {
	out := make(map[string]row, len(rows))
	for _, r := range rows {
		out[fmt.Sprint(r[key])] = r
	}
	return out
}

// pgRows reads a table as canonical JSON rows (see pyiceberg_dump.py).
func pgRows(t *testing.T, conn *pgx.Conn, selectList, from string) []row {
	t.Helper()
	rows, err := conn.Query(context.Background(), fmt.Sprintf("SELECT row_to_json(x)::text FROM (SELECT %s FROM %s) x", selectList, from))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		var r row
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pyicebergRows reads an Iceberg table with pyiceberg (extra: more
// arguments of pyiceberg_dump.py, e.g. --snapshot-id N).
func pyicebergRows(t *testing.T, tg target, table string, extra ...string) []row {
	t.Helper()
	uri := tg.catalog // a REST catalog as is, else the SQLite file
	if !strings.HasPrefix(uri, "http://") && !strings.HasPrefix(uri, "https://") {
		uri = "sqlite:///" + mustAbs(t, tg.catalog)
	}
	args := append([]string{"--catalog-uri", uri, "--catalog-name", "pg2iceberg", "--table", table}, extra...)
	if tg.s3 != nil {
		args = append(args, "--warehouse", tg.warehouse, "--s3-endpoint", tg.s3.Endpoint, "--s3-region", tg.s3.Region)
	} else {
		args = append(args, "--warehouse", "file://"+mustAbs(t, tg.warehouse))
	}
	out, err := pyicebergDump(tg.env(), args...)
	if err != nil {
		t.Fatalf("pyiceberg read of %s: %v", table, err)
	}
	return parseRows(t, out)
}

// parseRows parses pyiceberg_dump.py's output: a JSON row a line.
func parseRows(t *testing.T, out []byte) []row {
	t.Helper()
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("pyiceberg output %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// compareRows requires got and want to hold the same rows by key, each with
// exactly the columns of want (a column got lacks is a difference, not a
// NULL; a column only got has is one too), and reports whether they do.
func compareRows(t *testing.T, reader, table, key string, got, want []row) bool {
	t.Helper()
	g, w := rowsKey(got, key), rowsKey(want, key)
	if len(got) != len(g) {
		t.Errorf("%s %s: %d rows but %d distinct keys: duplicates", reader, table, len(got), len(g))
	}
	var diffs []string
	for k, wr := range w {
		gr, ok := g[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s=%s", key, k))
			continue
		}
		for col, wv := range wr {
			gv, present := gr[col]
			if !present {
				// Not read as NULL: a reader that lost a column must fail.
				diffs = append(diffs, fmt.Sprintf("%s=%s column %s missing, want %v", key, k, col, wv))
				continue
			}
			if fmt.Sprint(gv) != fmt.Sprint(wv) {
				diffs = append(diffs, fmt.Sprintf("%s=%s column %s = %v, want %v", key, k, col, gr[col], wv))
			}
		}
		for col, gv := range gr {
			if _, ok := wr[col]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s=%s column %s = %v is not in PostgreSQL's row", key, k, col, gv))
			}
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %s=%s", key, k))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 15 {
			diffs = append(diffs[:15], fmt.Sprintf("... %d more", len(diffs)-15))
		}
		t.Errorf("%s read of %s differs from PostgreSQL (%d rows, want %d):\n  %s", reader, table, len(got), len(want), strings.Join(diffs, "\n  "))
		return false
	}
	t.Logf("%s read of %s: %d rows equal to PostgreSQL", reader, table, len(got))
	return len(got) == len(g)
}
