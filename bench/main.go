// Command bench measures pg2iceberg against the physical limit of
// PostgreSQL's logical decoding, on one machine and in one run (issue 7).
//
// It starts a throwaway PostgreSQL and a versitygw S3 gateway
// (integration/harness). For each workload it creates the table and the
// publication, lets every consumer create its slot before the workload is
// written, writes the workload, and then times each consumer reading the
// same WAL from the same point:
//
//   - the limit: pg_recvlogical (pgoutput, proto_version 2, streaming on)
//     writing to /dev/null, once before and once after the bridges; the
//     faster of the two is the limit;
//   - bin/pg2iceberg run, from its slot to "all committed in Iceberg" (the
//     slot's confirmed_flush_lsn past the workload), to a local warehouse
//     and to S3.
//
// The backfill workloads measure the initial copy instead: a filled table,
// copied by psql with COPY (FORMAT binary) and (FORMAT text) to /dev/null,
// and by the bridge on a new slot, from its start to the copy's commit.
//
// A freshness run then measures the delay from a PostgreSQL commit to its
// visibility in Iceberg (the mirror's watermark, read from the catalog)
// under a steady load with the default flush settings.
//
// Run it from the repository root after `go build -o bin/pg2iceberg .`
// (make bench does both). Results go to stdout and to
// bench/results/<date>-<workload>.json. See bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// config holds the flags.
type config struct {
	quick      bool
	workloads  []string
	targets    []string
	bin        string
	resultsDir string
	keep       bool
	pprofDir   string
	revision   string
	bridgeEnv  []string
	bridgeArgs []string
	nullArgs   []string
	// ab is -ab, the two builds to compare ("": not an A/B run); pairs is
	// -pairs. set holds the flags given on the command line.
	ab    string
	pairs int
	set   map[string]bool

	txnRows         int
	key             string // bigint or uuid: the key type of the 4-column table
	insertRows      int
	updateTableRows int
	updates         int
	deleteTableRows int
	deletes         int
	bigTxnRows      int
	wideRows        int
	backfillRows    int
	backfillWide    int

	freshness         bool
	freshnessDuration time.Duration
	freshnessRate     int
	freshnessTxnRows  int
}

var allWorkloads = []string{"insert", "update", "delete", "bigtxn", "wide", "backfill", "backfill-wide"}

func parseFlags() config {
	var c config
	var workloads, targets, bridgeEnv, bridgeArgs, nullArgs string
	flag.BoolVar(&c.quick, "quick", false, "small sizes: the whole run takes a few minutes (explicit size flags still win)")
	flag.StringVar(&workloads, "workloads", strings.Join(allWorkloads, ","), "comma-separated workloads to run: "+strings.Join(allWorkloads, ", ")+" (empty: none)")
	flag.StringVar(&targets, "targets", "local,s3", "comma-separated warehouses to measure: local, s3")
	flag.StringVar(&c.bin, "bin", "bin/pg2iceberg", "the bridge binary")
	flag.StringVar(&c.resultsDir, "results", "bench/results", "directory for <date>-<workload>.json (empty: do not write)")
	flag.BoolVar(&c.keep, "keep", false, "keep the temp dir (warehouses, bridge logs) after the run")
	flag.StringVar(&c.pprofDir, "pprof", "", "build a profiling copy of the bridge (go build -overlay, no source change) and write CPU and allocation profiles of every measured bridge run into this directory")
	flag.StringVar(&bridgeEnv, "bridge-env", "", "extra environment for the bridge, comma-separated KEY=VALUE (e.g. GOGC=400), for experiments; recorded in the results")
	flag.StringVar(&bridgeArgs, "bridge-args", "", "extra flags for `pg2iceberg run`, comma-separated (e.g. --no-changelog or --flush-rows=100000), for experiments; recorded in the results")
	flag.StringVar(&nullArgs, "null-args", "", "extra flags for bench/nullconsumer, comma-separated (e.g. -rcvlowat=0 for a wake-up per send), for experiments; recorded in the results")
	flag.StringVar(&c.ab, "ab", "", "A/B mode: compare two builds of the bridge, A,B (each a git revision, built in a temporary worktree, or a bridge binary), in alternating runs over the same WAL; no limit, null consumer or freshness runs")
	flag.IntVar(&c.pairs, "pairs", 3, "A/B mode: runs of each build (A B A B ...)")
	flag.StringVar(&c.revision, "revision", "", "the commit the bridge was built from, for the results (default: read from ./.git)")
	flag.StringVar(&c.key, "key", "bigint", "key type of the 4-column table (insert, update, delete, bigtxn, backfill): bigint, or uuid (md5 of the bigint, so random order)")
	flag.IntVar(&c.txnRows, "txn-rows", 1000, "rows per transaction (insert, update, delete, wide)")
	flag.IntVar(&c.insertRows, "insert-rows", 2_000_000, "insert-only: rows inserted")
	flag.IntVar(&c.updateTableRows, "update-table-rows", 1_000_000, "update-heavy: rows in the table")
	flag.IntVar(&c.updates, "updates", 1_000_000, "update-heavy: rows updated (random keys, distinct within a transaction)")
	flag.IntVar(&c.deleteTableRows, "delete-table-rows", 1_000_000, "delete-heavy: rows in the table")
	flag.IntVar(&c.deletes, "deletes", 1_000_000, "delete-heavy: rows deleted (random order, at most the table size)")
	flag.IntVar(&c.bigTxnRows, "bigtxn-rows", 2_000_000, "one-transaction: rows inserted in one transaction")
	flag.IntVar(&c.wideRows, "wide-rows", 500_000, "wide table (40 columns): rows inserted")
	flag.IntVar(&c.backfillRows, "backfill-rows", 5_000_000, "backfill: rows in the 4-column table copied")
	flag.IntVar(&c.backfillWide, "backfill-wide-rows", 500_000, "backfill-wide: rows in the 40-column table copied")
	flag.BoolVar(&c.freshness, "freshness", true, "run the freshness measurement")
	flag.DurationVar(&c.freshnessDuration, "freshness-duration", 90*time.Second, "freshness: how long the steady load runs per target")
	flag.IntVar(&c.freshnessRate, "freshness-rate", 5000, "freshness: rows per second of the steady load")
	flag.IntVar(&c.freshnessTxnRows, "freshness-txn-rows", 100, "freshness: rows per transaction of the steady load")
	flag.Parse()

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.set = set
	if c.quick {
		quick := map[string]func(){
			"insert-rows":        func() { c.insertRows = 200_000 },
			"update-table-rows":  func() { c.updateTableRows = 200_000 },
			"updates":            func() { c.updates = 100_000 },
			"delete-table-rows":  func() { c.deleteTableRows = 200_000 },
			"deletes":            func() { c.deletes = 100_000 },
			"bigtxn-rows":        func() { c.bigTxnRows = 500_000 },
			"wide-rows":          func() { c.wideRows = 50_000 },
			"backfill-rows":      func() { c.backfillRows = 500_000 },
			"backfill-wide-rows": func() { c.backfillWide = 50_000 },
			"freshness-duration": func() { c.freshnessDuration = 25 * time.Second },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	c.workloads = splitList(workloads)
	c.targets = splitList(targets)
	c.bridgeEnv = splitList(bridgeEnv)
	c.bridgeArgs = splitList(bridgeArgs)
	c.nullArgs = splitList(nullArgs)
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c config) validate() error {
	var problems []string
	for _, w := range c.workloads {
		if !slices.Contains(allWorkloads, w) {
			problems = append(problems, fmt.Sprintf("unknown workload %q (choose from %s)", w, strings.Join(allWorkloads, ", ")))
		}
	}
	if len(c.targets) == 0 {
		problems = append(problems, "no target: give -targets local, s3 or local,s3")
	}
	for _, t := range c.targets {
		if t != "local" && t != "s3" {
			problems = append(problems, fmt.Sprintf("unknown target %q (local or s3)", t))
		}
	}
	if c.key != "" && c.key != "bigint" && c.key != "uuid" {
		problems = append(problems, fmt.Sprintf("unknown -key %q (bigint or uuid)", c.key))
	}
	if c.txnRows <= 0 || c.freshnessTxnRows <= 0 || c.freshnessRate <= 0 {
		problems = append(problems, "-txn-rows, -freshness-txn-rows and -freshness-rate must be positive")
	}
	if c.backfillRows <= 0 || c.backfillWide <= 0 {
		problems = append(problems, "-backfill-rows and -backfill-wide-rows must be positive")
	}
	if c.deletes > c.deleteTableRows {
		problems = append(problems, "-deletes must not exceed -delete-table-rows")
	}
	if c.txnRows > c.updateTableRows || c.txnRows > c.deleteTableRows {
		problems = append(problems, "-txn-rows must not exceed the update and delete table sizes")
	}
	problems = append(problems, c.validateAB()...)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// validateAB checks the flags of an A/B run.
func (c config) validateAB() []string {
	if c.ab == "" {
		if c.set["pairs"] {
			return []string{"-pairs is for A/B runs: give -ab A,B too"}
		}
		return nil
	}
	var problems []string
	if _, err := parseAB(c.ab); err != nil {
		problems = append(problems, err.Error())
	}
	if c.pairs < 1 {
		problems = append(problems, "-pairs must be at least 1")
	}
	for _, f := range []string{"bin", "pprof", "revision", "null-args"} {
		if c.set[f] {
			problems = append(problems, fmt.Sprintf("-%s does not apply to an A/B run (-ab names the binaries)", f))
		}
	}
	if len(c.workloads) == 0 {
		problems = append(problems, "an A/B run needs at least one workload")
	}
	return problems
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	cfg := parseFlags()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// env is what every measurement shares.
type env struct {
	cfg     config
	pg      *harness.Postgres
	s3      *harness.S3
	tmp     string
	bin     string // the bridge binary actually run (a profiling copy with -pprof)
	nullBin string // bench/nullconsumer, built when a streaming workload runs
	// abBuilds are the two builds of an A/B run.
	abBuilds []abBuild
	machine  machineInfo
	build    buildInfo
	date     string
}

const (
	benchDB  = "bench"
	s3Bucket = "bench"
)

func run(ctx context.Context, cfg config) error {
	if _, err := os.Stat(cfg.bin); err != nil && cfg.ab == "" {
		return fmt.Errorf("%s not found: run from the repository root after `go build -o bin/pg2iceberg .` (make bench does both)", cfg.bin)
	}
	if _, err := os.Stat(recvlogical); err != nil {
		return fmt.Errorf("%s not found: install the PostgreSQL client (scripts/setup.sh installs the server package, which has it)", recvlogical)
	}
	tmp, err := os.MkdirTemp("", "pg2iceberg-bench-")
	if err != nil {
		return fmt.Errorf("create temp dir: %w", err)
	}
	if cfg.keep {
		logf("temp dir %s is kept", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	e := &env{cfg: cfg, tmp: tmp, bin: cfg.bin, date: time.Now().Format("2006-01-02")}
	e.machine = readMachine()
	e.build = readBuild(cfg.bin)
	if cfg.revision != "" {
		e.build.Revision = cfg.revision
	}
	e.build.ExtraEnv, e.build.ExtraArgs = cfg.bridgeEnv, cfg.bridgeArgs
	if cfg.pprofDir != "" {
		if e.bin, err = buildProfilingBridge(ctx, tmp); err != nil {
			return err
		}
		if err := os.MkdirAll(cfg.pprofDir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", cfg.pprofDir, err)
		}
		logf("profiling build of the bridge: %s; profiles go to %s", e.bin, cfg.pprofDir)
	}
	if cfg.ab != "" {
		// Build first: a revision that does not build fails the run at once.
		specs, _ := parseAB(cfg.ab) // checked by validate
		if e.abBuilds, err = resolveBuilds(ctx, tmp, specs); err != nil {
			return err
		}
	} else if slices.ContainsFunc(cfg.workloads, func(w string) bool { return !e.workload(w).backfill }) {
		if e.nullBin, err = buildNullConsumer(ctx, tmp); err != nil {
			return err
		}
	}
	if cfg.resultsDir != "" {
		if err := os.MkdirAll(cfg.resultsDir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", cfg.resultsDir, err)
		}
	}

	logf("starting PostgreSQL")
	opts := harness.PostgresOptions{Logf: logf}
	if cfg.ab != "" {
		// Every run of a workload has its slot at once.
		opts.Settings = map[string]string{"max_replication_slots": strconv.Itoa(max(10, abSlots(cfg)+2))}
	}
	e.pg, err = harness.StartPostgres(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.pg.Stop(); err != nil {
			logf("stop postgres: %v", err)
		}
	}()
	if slices.Contains(cfg.targets, "s3") {
		logf("starting versitygw")
		if e.s3, err = harness.StartS3(ctx, logf); err != nil {
			return err
		}
		defer func() {
			if err := e.s3.Stop(); err != nil {
				logf("stop s3: %v", err)
			}
		}()
		if err := e.s3.CreateBucket(ctx, s3Bucket); err != nil {
			return err
		}
		// The bench reads the S3 catalog's tables itself for file counts.
		for _, kv := range e.s3.Env() {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}
	if err := e.pg.Exec(ctx, "CREATE DATABASE "+benchDB); err != nil {
		return err
	}
	if err := e.pg.ExecDB(ctx, benchDB, "CREATE SCHEMA bench"); err != nil {
		return err
	}
	if e.machine.Postgres, err = e.serverVersion(ctx); err != nil {
		return err
	}
	logf("machine: %s", e.machine)
	if cfg.ab != "" {
		return e.runABAll(ctx)
	}

	var results []*workloadResult
	var backfills []*backfillResult
	for _, name := range cfg.workloads {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w := e.workload(name)
		logf("workload %s: %s", w.name, w.description)
		if w.backfill {
			res, err := e.runBackfill(ctx, w)
			if err != nil {
				return fmt.Errorf("workload %s: %w", name, err)
			}
			backfills = append(backfills, res)
			printBackfill(os.Stdout, res)
			if err := e.writeJSON(res.Workload.Name, res); err != nil {
				return err
			}
			continue
		}
		res, err := e.runWorkload(ctx, w)
		if err != nil {
			return fmt.Errorf("workload %s: %w", name, err)
		}
		results = append(results, res)
		printWorkload(os.Stdout, res)
		if err := e.writeJSON(res.Workload.Name, res); err != nil {
			return err
		}
	}
	var fresh *freshnessResult
	if cfg.freshness && ctx.Err() == nil {
		if fresh, err = e.runFreshness(ctx); err != nil {
			return fmt.Errorf("freshness: %w", err)
		}
		if err := e.writeJSON("freshness", fresh); err != nil {
			return err
		}
	}
	printSummary(os.Stdout, e, results, backfills, fresh)
	return nil
}

// writeJSON writes v to <results>/<date>-<name>.json (-quick runs get a
// -quick suffix so they never replace a full run's figures).
func (e *env) writeJSON(name string, v any) error {
	if e.cfg.resultsDir == "" {
		return nil
	}
	if e.cfg.quick {
		name += "-quick"
	}
	path := filepath.Join(e.cfg.resultsDir, e.date+"-"+name+".json")
	if err := writeJSONFile(path, v); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}
