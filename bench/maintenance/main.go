// Command maintenance measures what lake maintenance buys and costs
// (issue 17's bench figures): a pyiceberg full scan of a mirror after N
// one-second flushes of random updates, inserts and deletes with the
// bridge's compaction on and off; the stream's catch-up throughput on a
// backlog with compaction on against off; and compaction's CPU seconds
// per GB rewritten, from `pg2iceberg maintain` under /usr/bin/time.
//
//	go build -o bin/pg2iceberg . && go run ./bench/maintenance -flushes 180
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

func main() {
	bin := flag.String("bin", "bin/pg2iceberg", "the bridge binary")
	flushes := flag.Int("flushes", 180, "one-second flushes of random changes per run (3600: an hour)")
	rows := flag.Int("rows", 20000, "rows in the table at the start")
	backlog := flag.Int("backlog", 200000, "changes in the catch-up backlog (throughput figure; large enough that compactions run during the catch-up)")
	flag.Parse()
	if err := run(context.Background(), *bin, *flushes, *rows, *backlog); err != nil {
		fmt.Fprintln(os.Stderr, "maintenance bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func run(ctx context.Context, bin string, flushes, rows, backlog int) error {
	pg, err := harness.StartPostgres(ctx, harness.PostgresOptions{Logf: logf})
	if err != nil {
		return err
	}
	defer pg.Stop()
	tmp, err := os.MkdirTemp("", "pg2iceberg-bench-maint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	load, _ := exec.Command("cat", "/proc/loadavg").Output()
	logf("load before: %s", strings.TrimSpace(string(load)))
	for _, on := range []bool{true, false} {
		r, err := oneRun(ctx, pg, bin, tmp, on, flushes, rows, backlog)
		if err != nil {
			return err
		}
		fmt.Printf("compaction %-3s: %d flushes: caught up %.1fs after the load; %d live files, pyiceberg full scan %.2fs (median of 3); backlog of %d changes caught up at %.0f changes/s (%d commits, %d compactions installed meanwhile)\n",
			onOff(on), flushes, r.behind.Seconds(), r.live, r.scan.Seconds(), backlog, r.rate, r.flushesCU, r.compactions)
		if !on {
			cpu, gb, err := maintainCPU(bin, r.wh, r.cat)
			if err != nil {
				return err
			}
			fmt.Printf("compaction by maintain: %.3f GB rewritten, %.2f CPU s, %.1f CPU s per GB\n", gb, cpu, cpu/gb)
		}
	}
	load, _ = exec.Command("cat", "/proc/loadavg").Output()
	logf("load after: %s", strings.TrimSpace(string(load)))
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

type result struct {
	live   int
	scan   time.Duration
	rate   float64
	behind time.Duration // from the load's end until the slot confirmed it
	// compactions installed during the catch-up, and its commits
	compactions, flushesCU int
	wh, cat                string
}

// oneRun streams flushes seconds of random changes into a fresh table,
// times pyiceberg's full scan, then stops the bridge, writes a backlog
// and times its catch-up.
func oneRun(ctx context.Context, pg *harness.Postgres, bin, tmp string, on bool, flushes, rows, backlog int) (result, error) {
	name := "maint_" + onOff(on)
	db := name
	if err := pg.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return result{}, err
	}
	conn, err := pg.Conn(ctx, db)
	if err != nil {
		return result{}, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE items (id int PRIMARY KEY, n int, v text);
		INSERT INTO items SELECT g, g, md5(g::text) FROM generate_series(1, %d) g;
		CREATE PUBLICATION %[2]s FOR TABLE items;`, rows, name)); err != nil {
		return result{}, err
	}
	dir := filepath.Join(tmp, name)
	r := result{wh: filepath.Join(dir, "wh"), cat: filepath.Join(dir, "catalog.db")}
	cfg := filepath.Join(dir, "cfg.yaml")
	_ = os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("tables:\n  - table: public.items\n    compaction:\n      enabled: %v\n", on)), 0o644); err != nil {
		return r, err
	}
	args := []string{"run", "--source", pg.SuperURL(db), "--publication", name, "--flush-interval", "1s", "--warehouse", r.wh, "--catalog", r.cat, "--config", cfg}
	b, err := start(bin, filepath.Join(dir, "bridge.log"), args...)
	if err != nil {
		return r, err
	}
	next := rows + 1
	end := time.Now().Add(time.Duration(flushes) * time.Second)
	for time.Now().Before(end) {
		tick := time.Now()
		for range 50 {
			if err := change(ctx, conn, rows, &next); err != nil {
				return r, err
			}
		}
		time.Sleep(time.Until(tick.Add(time.Second)))
	}
	// Without compaction each commit costs more than the last (more
	// manifests and delete files), so the stream may end the load behind:
	// how far is a figure too.
	t0 := time.Now()
	if err := caughtUp(ctx, conn, 15*time.Minute); err != nil {
		return r, err
	}
	r.behind = time.Since(t0)
	stop(b)
	if r.live, r.scan, err = scan(r.wh, r.cat); err != nil {
		return r, err
	}
	// Throughput: a backlog in 100-change transactions, then the bridge
	// catches up with compaction on or off (the table has the small files
	// of the run above).
	for i := 0; i < backlog; i += 100 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return r, err
		}
		for range 100 {
			if err := change(ctx, tx.Conn(), rows, &next); err != nil {
				return r, err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return r, err
		}
	}
	// Flushes of at most 256 KiB of Parquet make the catch-up commit
	// about one file per 2,000 changes, so compactions fall due (and run)
	// while it streams, in the run with compaction on.
	t0 = time.Now()
	if b, err = start(bin, filepath.Join(dir, "bridge2.log"), append(args, "--flush-bytes", "262144")...); err != nil {
		return r, err
	}
	if err := caughtUp(ctx, conn, 10*time.Minute); err != nil {
		return r, err
	}
	r.rate = float64(backlog) / time.Since(t0).Seconds()
	stop(b)
	logs, _ := os.ReadFile(filepath.Join(dir, "bridge2.log"))
	r.compactions = strings.Count(string(logs), `msg="compaction installed"`)
	r.flushesCU = strings.Count(string(logs), `msg="batch committed"`)
	logf("%s: catch-up installed %d compactions", name, r.compactions)
	return r, nil
}

// change is one random update (6 in 10), insert (3 in 10) or delete.
func change(ctx context.Context, c *pgx.Conn, rows int, next *int) error {
	var err error
	switch k := rand.IntN(10); {
	case k < 6:
		_, err = c.Exec(ctx, `UPDATE items SET n = n + 1 WHERE id = $1`, 1+rand.IntN(rows))
	case k < 9:
		_, err = c.Exec(ctx, `INSERT INTO items VALUES ($1, $1, 'i')`, *next)
		*next++
	default:
		_, err = c.Exec(ctx, `DELETE FROM items WHERE id = $1`, 1+rand.IntN(rows))
	}
	return err
}

// caughtUp waits until the slot of c's database has confirmed the
// current WAL position.
func caughtUp(ctx context.Context, c *pgx.Conn, within time.Duration) error {
	var target string
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&target); err != nil {
		return err
	}
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT coalesce(bool_and(confirmed_flush_lsn >= $1::pg_lsn), false) FROM pg_replication_slots WHERE database = current_database()`, target).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("the slot did not confirm %s within %s", target, within)
}

func start(bin, logPath string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	return cmd, cmd.Start()
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
}

// scanScript counts the mirror's live files and times three full scans.
const scanScript = `import sys, time
from pyiceberg.catalog.sql import SqlCatalog
cat = SqlCatalog("pg2iceberg", uri="sqlite:///" + sys.argv[2], warehouse="file://" + sys.argv[1])
t = cat.load_table("public.items")
s = t.current_snapshot().summary
live = int(s["total-data-files"]) + int(s["total-delete-files"])
times = []
for _ in range(3):
    t0 = time.time(); n = t.scan().to_arrow().num_rows; times.append(time.time() - t0)
print(live, sorted(times)[1], n)`

func scan(wh, cat string) (int, time.Duration, error) {
	out, err := exec.Command("python3", "-c", scanScript, wh, cat).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("pyiceberg scan: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("pyiceberg scan printed %q", out)
	}
	live, _ := strconv.Atoi(f[0])
	secs, _ := strconv.ParseFloat(f[1], 64)
	return live, time.Duration(secs * float64(time.Second)), nil
}

var rewroteRE = regexp.MustCompile(`compaction: rewrote \d+ data files \(([\d.]+) (B|KiB|MiB|GiB)\)`)

// maintainCPU runs pg2iceberg maintain on the uncompacted table under
// /usr/bin/time and returns its CPU seconds and the GB it rewrote.
func maintainCPU(bin, wh, cat string) (float64, float64, error) {
	out, err := exec.Command("/usr/bin/time", "-f", "cpu %U %S", bin, "maintain", "--warehouse", wh, "--catalog", cat, "--table", "public.items").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("maintain: %v\n%s", err, out)
	}
	m := rewroteRE.FindStringSubmatch(string(out))
	i := strings.LastIndex(string(out), "cpu ")
	if m == nil || i < 0 {
		return 0, 0, fmt.Errorf("maintain output has no rewrite or CPU time:\n%s", out)
	}
	var user, sys float64
	fmt.Sscanf(string(out[i:]), "cpu %f %f", &user, &sys)
	v, _ := strconv.ParseFloat(m[1], 64)
	unit := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]
	return user + sys, v * unit / 1e9, nil
}
