// Command pg2iceberg streams a PostgreSQL publication into Apache Iceberg
// tables: a mirror (current state) and a changelog (every change) per table.
//
// main turns flags, environment variables and defaults into each package's
// Config and runs the stages; it is the only place that starts long-lived
// goroutines (the signal handler).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // zone names of timestamptz rules, the same on every host

	"github.com/apache/iceberg-go/catalog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

func env(name string) []string {
	return []string{"PG2ICEBERG_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
}

var (
	flagSource = &cli.StringFlag{Name: "source", EnvVars: env("source"), Required: true,
		Usage: "PostgreSQL URL of the source database, e.g. postgres://app@db:5432/shop (put the password in PGPASSWORD or ~/.pgpass, not here)"}
	flagPublication = &cli.StringFlag{Name: "publication", EnvVars: env("publication"), Required: true,
		Usage: "publication to stream; it must exist, e.g. CREATE PUBLICATION shop_pub FOR TABLE orders, customers"}
	flagSlot = &cli.StringFlag{Name: "slot", EnvVars: env("slot"),
		Usage: "replication slot; created if missing (default pg2iceberg_<publication>)"}
	flagWarehouse = &cli.StringFlag{Name: "warehouse", EnvVars: env("warehouse"), Value: "./warehouse",
		Usage: "where the tables live: a directory, or s3://bucket/prefix"}
	flagCatalog = &cli.StringFlag{Name: "catalog", EnvVars: env("catalog"),
		Usage: "catalog: empty for the embedded SQLite catalog (<warehouse>/catalog.db), a SQLite file path, postgres://... for a SQL catalog in Postgres, or http(s)://... for a REST catalog"}
	flagS3Endpoint = &cli.StringFlag{Name: "s3-endpoint", EnvVars: env("s3-endpoint"),
		Usage: "S3-compatible endpoint, e.g. http://127.0.0.1:7070 (credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the AWS profile)"}
	flagConfig = &cli.StringFlag{Name: "config", EnvVars: env("config"),
		Usage: "a YAML file of type mapping rules, e.g. rules: [{type: numeric, to: \"decimal(38,9)\"}, {column: public.users.ssn, to: exclude}] (see docs/type-mapping.md)"}
	flagS3Region   = &cli.StringFlag{Name: "s3-region", EnvVars: env("s3-region"), Value: "us-east-1", Usage: "S3 region"}
	flagS3PathStye = &cli.BoolFlag{Name: "s3-path-style", EnvVars: env("s3-path-style"), Usage: "address buckets as host/bucket/key, not bucket.host/key (MinIO, versitygw)"}
)

// loadOverrides reads the --config file's type mapping rules (nil without).
func loadOverrides(c *cli.Context) (*mapping.Overrides, error) {
	path := c.String(flagConfig.Name)
	if path == "" {
		return nil, nil
	}
	return mapping.ReadConfig(path)
}

func catalogConfig(c *cli.Context) iceberg.CatalogConfig {
	return iceberg.CatalogConfig{
		Warehouse:   c.String(flagWarehouse.Name),
		Catalog:     c.String(flagCatalog.Name),
		S3Endpoint:  c.String(flagS3Endpoint.Name),
		S3Region:    c.String(flagS3Region.Name),
		S3PathStyle: c.Bool(flagS3PathStye.Name),
	}
}

// slotName is --slot, checked, or the slot derived from --publication.
func slotName(c *cli.Context) (string, error) {
	if s := c.String(flagSlot.Name); s != "" {
		return s, replication.ValidateSlotName(s)
	}
	return replication.SlotName(c.String(flagPublication.Name)), nil
}

func newLogger(c *cli.Context) *slog.Logger {
	level := slog.LevelInfo
	if debugLevel(c) {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: level, ReplaceAttr: scrubAttr(scrubber(c))}))
}

func main() {
	// Process-wide, once, before any Parquet file is written: pages are
	// compressed without zstd's content checksum (see parquetx).
	if err := parquetx.UseFastZstd(); err != nil {
		fmt.Fprintln(os.Stderr, "pg2iceberg:", err)
		os.Exit(1)
	}
	app := &cli.App{
		Name:  "pg2iceberg",
		Usage: "stream a PostgreSQL publication into Apache Iceberg tables",
		Description: `Example:
   pg2iceberg run --source postgres://app@localhost/shop --publication shop_pub --warehouse ./warehouse
   pg2iceberg status --source postgres://app@localhost/shop --publication shop_pub --warehouse ./warehouse`,
		Flags: []cli.Flag{flagDebug},
		Commands: []*cli.Command{
			serveCommand(), repairCommand(),
			{
				Name:  "run",
				Usage: "copy the published tables, then stream every change into Iceberg",
				Flags: []cli.Flag{flagSource, flagPublication, flagSlot, flagWarehouse, flagCatalog, flagConfig, flagS3Endpoint, flagS3Region, flagS3PathStye,
					flagServeCatalog, flagCatalogToken, flagCatalogTokenFile, flagVendS3Credentials,
					&cli.DurationFlag{Name: "flush-interval", EnvVars: env("flush-interval"), Value: iceberg.DefaultFlushInterval, Usage: "commit at least this often while changes are pending, e.g. 5s"},
					&cli.IntFlag{Name: "flush-rows", EnvVars: env("flush-rows"), Value: iceberg.DefaultFlushRows, Usage: "commit once this many changes are pending"},
					&cli.Int64Flag{Name: "flush-bytes", EnvVars: env("flush-bytes"), Value: iceberg.DefaultFlushBytes, Usage: "commit once this many Parquet bytes are pending"},
					&cli.StringFlag{Name: "memory-limit", EnvVars: env("memory-limit"), Value: "384MiB", Usage: "soft memory limit of the Go heap, e.g. 384MiB, 2GiB or 2GB (KB, MB, GB: powers of 1000; KiB, MiB, GiB: powers of 1024); the process peaks somewhat above it"},
					&cli.BoolFlag{Name: "no-changelog", EnvVars: env("no-changelog"), Usage: "do not write <table>__changelog tables"},
					&cli.StringFlag{Name: "spool-dir", EnvVars: env("spool-dir"), Usage: "directory for large in-progress transactions (default: the system temp dir)"},
					&cli.StringFlag{Name: "backfill", EnvVars: env("backfill"), Value: "copy", Usage: "copy: copy existing rows of every published table first; skip: only stream changes from now on"},
					&cli.IntFlag{Name: "backfill-workers", EnvVars: env("backfill-workers"), Value: runtime.NumCPU(), Usage: "connections copying a table in parallel (ctid block ranges, one snapshot)"},
					&cli.StringFlag{Name: "metrics-addr", EnvVars: env("metrics-addr"), Usage: "serve Prometheus metrics at /metrics, progress as JSON at /status and a health check at /healthz, e.g. 127.0.0.1:9187"},
					flagOnStaleTable,
				},
				Action: runCmd,
			},
			{
				Name:  "setup",
				Usage: "install the DDL capture (an event trigger) so renames propagate exactly and schema changes apply at commit; run once as a superuser",
				Flags: []cli.Flag{&cli.StringFlag{Name: "source", EnvVars: env("source"), Usage: flagSource.Usage + " (a superuser; not needed with --print)"},
					&cli.BoolFlag{Name: "print", Usage: "print the SQL instead of running it"},
					&cli.BoolFlag{Name: "uninstall", Usage: "remove the DDL capture"},
					&cli.StringFlag{Name: "grant-to", Usage: "the role the bridge runs as, when it is not a superuser: granted the right to read the key DDL events are signed with"},
				},
				Action: setupCmd,
			},
			{
				Name:  "backfill",
				Usage: "copy one table again, replacing its mirror's rows in one snapshot (stop the bridge first)",
				Flags: []cli.Flag{flagSource, flagPublication, flagSlot, flagWarehouse, flagCatalog, flagConfig, flagS3Endpoint, flagS3Region, flagS3PathStye,
					&cli.StringFlag{Name: "table", Required: true, Usage: "the published table to copy, as schema.table"},
					&cli.IntFlag{Name: "backfill-workers", EnvVars: env("backfill-workers"), Value: runtime.NumCPU(), Usage: "connections copying in parallel"},
					&cli.StringFlag{Name: "backfill", Hidden: true, Value: "copy"},
				},
				Action: backfillCmd,
			},
			{
				Name:   "status",
				Usage:  "print slot lag and each table's watermark",
				Flags:  []cli.Flag{flagSource, flagPublication, flagSlot, flagWarehouse, flagCatalog, flagConfig, flagS3Endpoint, flagS3Region, flagS3PathStye},
				Action: statusCmd,
			},
		},
	}
	commandFlags(app)
	scrubActions(app)
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "pg2iceberg:", err)
		os.Exit(1)
	}
}

func runCmd(c *cli.Context) error {
	overrides, err := loadOverrides(c)
	if err != nil {
		return err
	}
	log := newLogger(c)
	limit, err := parseBytes(c.String("memory-limit"))
	if err != nil {
		return err
	}
	if b := c.String("backfill"); b != "copy" && b != "skip" {
		return fmt.Errorf("--backfill %q: use copy or skip", b)
	}
	debug.SetMemoryLimit(limit)

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	source, pub := c.String(flagSource.Name), c.String(flagPublication.Name)
	slot, err := slotName(c)
	if err != nil {
		return err
	}
	// Before anything is created (the slot, the catalog file).
	if err := iceberg.CheckWarehouse(ctx, catalogConfig(c), true); err != nil {
		return err
	}

	conn, err := replication.Connect(ctx, source)
	if err != nil {
		return err
	}
	defer func() { conn.Close(context.Background()) }() // conn is reopened after a lost connection
	if err := replication.Lease(ctx, conn, slot); err != nil {
		return err
	}
	_, noSlot := replication.LookupSlot(ctx, conn, slot)
	rels, held, err := replication.PreflightStart(ctx, conn, pub, overrides, noSlot == nil, log)
	if err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	repl, err := replication.ConnectReplication(ctx, source)
	if err != nil {
		return err
	}
	defer repl.Close(context.Background())
	sys, err := replication.Identify(ctx, repl)
	if err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, catalogConfig(c))
	if err != nil {
		return err
	}
	defer closeCatalog(cat, log)
	stopCatalog, err := serveCatalogForRun(ctx, c, log) // starts nothing without --serve-catalog
	if err != nil {
		return err
	}
	defer stopCatalog()
	sink := iceberg.NewSink(cat, iceberg.Config{
		Source:        iceberg.SourceID{SystemID: sys.SystemID, Database: sys.Database, Slot: slot},
		NoChangelog:   c.Bool("no-changelog"),
		FlushRows:     c.Int("flush-rows"),
		FlushBytes:    c.Int64("flush-bytes"),
		FlushInterval: c.Duration("flush-interval"),
		Describe: func(ctx context.Context, rel *decode.Relation, col *decode.Column) error {
			return replication.DescribeColumn(ctx, conn, rel, col, overrides)
		},
		Rules: overrides,
	}, log)
	if err := sink.CheckNames(rels); err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	for _, rel := range rels {
		if err := addTable(ctx, conn, sink, rel); err != nil {
			return err
		}
	}
	// Metrics and status from here on, so the first copy's progress shows.
	progress := &replication.Progress{}
	if err := holdTables(ctx, cat, held, progress, log); err != nil {
		return err
	}
	if addr := c.String("metrics-addr"); addr != "" {
		srv, err := serveMetrics(addr, progress, sink.Stats(), log)
		if err != nil {
			return err
		}
		defer srv.Close()
	}

	info, err := replication.LookupSlot(ctx, conn, slot)
	slotExists := err == nil
	if err != nil && !errors.Is(err, replication.ErrNoSlot) {
		return err
	}
	if slotExists {
		if info.Plugin != "pgoutput" {
			return fmt.Errorf("slot %q uses plugin %q, not pgoutput: choose another --slot", slot, info.Plugin)
		}
		// Tables whose copy never completed (the bridge stopped during the
		// initial copy, or they were added to the publication since) are
		// copied now, each in a snapshot of its own (see SyncTable).
		// The stream resumes at the slot's confirmed position: chunks an
		// interrupted copy committed in a snapshot at or after it are kept.
		// Before anything is written: a table behind what the slot
		// confirmed (a restored catalog) is never streamed into silently.
		stale, err := staleTables(ctx, c, sink, rels, slot, info.ConfirmedFlush, log)
		if err != nil {
			return err
		}
		_, notDone := sink.CopyState()
		if err := checkRenames(ctx, conn, sink, rels, slices.Concat(notDone, sink.RecopyPending(), stale)); err != nil {
			return err
		}
		for _, rel := range stale {
			if err := backfillTable(ctx, c, source, rel, sink, nil, 0, log); err != nil {
				return stoppedOr(ctx, err, log)
			}
		}
		if len(notDone) > 0 {
			progress.SetPhase(replication.PhaseCopying, "tables whose copy did not finish, before streaming")
		}
		for _, rel := range notDone {
			if err := backfillTable(ctx, c, source, rel, sink, nil, info.ConfirmedFlush, log); err != nil {
				return stoppedOr(ctx, err, log)
			}
		}
		// A re-copy for column values that was interrupted runs again.
		for _, rel := range sink.RecopyPending() {
			log.Info("an interrupted re-copy runs again", "table", rel.QualifiedName())
			if err := backfillTable(ctx, c, source, rel, sink, nil, 0, log); err != nil {
				return stoppedOr(ctx, err, log)
			}
		}
	}
	start := info.ConfirmedFlush // where the slot resumes; the consistent point of a new one
	if !slotExists {
		ns, err := replication.CreateSlot(ctx, repl, slot)
		if err != nil {
			return err
		}
		log.Info("slot created", "slot", slot, "consistent_point", ns.ConsistentPoint)
		progress.SetPhase(replication.PhaseCopying, "the initial copy, before streaming")
		if c.String("backfill") == "skip" {
			for _, rel := range rels {
				if err := sink.FinishCopy(ctx, rel.ID, ns.ConsistentPoint); err != nil {
					return err
				}
			}
		} else if err := replication.CopyTables(ctx, ns, rels, copySink{sink}, copyConfig(c, source, nil), log); err != nil {
			return stoppedOr(ctx, err, log)
		}
		start = ns.ConsistentPoint
	}

	backoff := time.Second
	for {
		err = replication.Stream(ctx, repl, replication.StreamConfig{
			Slot: slot, Publication: pub, Start: start, SpoolDir: c.String("spool-dir"), Progress: progress,
			LoadDDLKey: func(ctx context.Context) ([]byte, error) { return replication.LoadDDLKey(ctx, conn) },
			WaitVisible: func(ctx context.Context, xid uint32, keepalive func() error) error {
				return replication.WaitVisible(ctx, conn, xid, keepalive, log)
			},
			OnNewTable: func(ctx context.Context, rel *decode.Relation, keepalive func() error) error {
				full, err := replication.LookupTable(ctx, conn, pub, rel.ID, overrides)
				if err != nil {
					return err
				}
				if err := addTable(ctx, conn, sink, full); err != nil {
					return err
				}
				return backfillTable(ctx, c, source, full, sink, keepalive, 0, log)
			},
			OnKeyGained: func(ctx context.Context, relID uint32, keepalive func() error) error {
				full, err := replication.LookupTable(ctx, conn, pub, relID, overrides)
				if errors.Is(err, replication.ErrNotPublished) {
					log.Warn("table gained a key but is gone or no longer published: no mirror", "relid", relID)
					return nil
				}
				if err != nil {
					return err
				}
				if !full.HasKey() {
					log.Warn("table had a key for a while but has none now: no mirror", "table", full.QualifiedName())
					return nil
				}
				if err := sink.AddMirror(ctx, full); err != nil {
					return err
				}
				attnums, err := replication.AttNums(ctx, conn, relID)
				if err != nil {
					return err
				}
				if err := sink.InitAttNums(ctx, relID, attnums); err != nil {
					return err
				}
				return backfillTable(ctx, c, source, full, sink, keepalive, 0, log)
			},
			OnRecopy: func(ctx context.Context, relID uint32, keepalive func() error) error {
				full, err := replication.LookupTable(ctx, conn, pub, relID, overrides)
				if err != nil {
					return err
				}
				if err := sink.MarkRecopy(ctx, relID, "rows with unknown values after a resumed copy"); err != nil {
					return err
				}
				return backfillTable(ctx, c, source, full, sink, keepalive, 0, log)
			},
			OnColumnsAdded: func(ctx context.Context, relID uint32, cols decode.NewColumns, keepalive func() error) error {
				// ADD COLUMN ... DEFAULT gives existing rows a value that no
				// change event carries, and a type change kept as a new column
				// converted every row: copy the table again to pick them up.
				var withDefault int
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1 AND attname = ANY($2)
					AND NOT attisdropped AND (atthasmissing OR atthasdef)`, relID, cols.Added).Scan(&withDefault); err != nil {
					return fmt.Errorf("check defaults of added columns: %w", err)
				}
				// A column dropped from a mirror kept by the whole row changed
				// every row's key: copy it again to index the rows anew.
				if withDefault == 0 && len(cols.Retyped) == 0 && len(cols.Dropped) == 0 {
					return sink.ClearRecopy(ctx, relID)
				}
				full, err := replication.LookupTable(ctx, conn, pub, relID, overrides)
				if errors.Is(err, replication.ErrNotPublished) {
					log.Warn("column added with a default or retyped, but the table is gone or no longer published: not copied again", "relid", relID)
					return sink.ClearRecopy(ctx, relID)
				}
				if err != nil {
					return err
				}
				if len(cols.Dropped) > 0 {
					log.Info("column dropped from a mirror kept by the whole row: copying the table again to index its rows by their new values", "table", full.QualifiedName(), "dropped", cols.Dropped)
				} else {
					log.Info("column added with a default or retyped: copying the table again so existing rows show their values", "table", full.QualifiedName(), "added", cols.Added, "retyped", cols.Retyped)
				}
				reason := fmt.Sprintf("added %v, retyped %v, dropped %v", cols.Added, cols.Retyped, cols.Dropped)
				if err := sink.MarkRecopy(ctx, relID, reason); err != nil {
					return err
				}
				return backfillTable(ctx, c, source, full, sink, keepalive, 0, log)
			},
		}, sink, log)
		var retry interface{ Retryable() bool }
		if err == nil || !errors.As(err, &retry) || !retry.Retryable() || sink.InTransaction() {
			break
		}
		// Between transactions: commit what arrived, then resume from it.
		log.Warn("replication connection lost; reconnecting", "error", err, "backoff", backoff)
		progress.SetPhase(replication.PhaseReconnecting, err.Error())
		if err := sink.Flush(ctx); err != nil {
			return err
		}
		repl.Close(context.Background())
		if repl, err = reconnect(ctx, source, &backoff, log); err != nil {
			return err
		}
		// A server restart drops the SQL connection too (table syncs and
		// column descriptions use it): reopen it as well.
		if err := conn.Ping(ctx); err != nil {
			log.Warn("SQL connection lost too; reopening it", "error", err)
			conn.Close(context.Background())
			if conn, err = replication.Connect(ctx, source); err != nil {
				return err
			}
			if err := replication.Relock(ctx, conn, slot); err != nil {
				return err
			}
		}
		start = max(start, sink.Durable(), progress.Acked())
	}
	if err != nil {
		return err
	}
	progress.SetPhase(replication.PhaseStopping, "")
	// Stopped between transactions: commit what is pending, acknowledge it.
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sink.Flush(fctx); err != nil {
		return err
	}
	if err := replication.FinalStatus(fctx, repl, sink.Durable()); err != nil {
		return err
	}
	if err := sink.SaveIndexes(); err != nil {
		// Only a cache: the next start rebuilds it from the tables.
		log.Warn("key index not saved", "error", err)
	}
	log.Info("stopped", "lsn", max(start, sink.Durable(), progress.Acked()))
	return nil
}

// addTable opens a table's Iceberg tables and records its attnums for the
// DDL capture.
func addTable(ctx context.Context, conn *pgx.Conn, sink *iceberg.Sink, rel *decode.Relation) error {
	if err := sink.AddTable(ctx, rel); err != nil {
		return err
	}
	attnums, err := replication.AttNums(ctx, conn, rel.ID)
	if err != nil {
		return err
	}
	return sink.InitAttNums(ctx, rel.ID, attnums)
}

// closeCatalog closes the catalog at exit; the embedded SQLite catalog is
// checkpointed, so catalog.db alone is a complete copy after a clean stop.
func closeCatalog(cat catalog.Catalog, log *slog.Logger) {
	if err := iceberg.CloseCatalog(cat); err != nil {
		log.Warn("catalog not closed cleanly; back up catalog.db together with catalog.db-wal", "error", err)
	}
}

// stoppedOr turns an error caused by a requested stop (SIGINT, SIGTERM)
// during a copy into a clean exit: the next start copies what is missing.
func stoppedOr(ctx context.Context, err error, log *slog.Logger) error {
	if ctx.Err() != nil {
		log.Warn("stopped during a copy; the next start copies the tables not yet complete", "error", err)
		return nil
	}
	return err
}

// backfillTable copies one table in a snapshot of its own, or with
// --backfill=skip only marks it copied so that changes from now on apply.
// resumeFrom is where the stream will resume (see CopyConfig.ResumeFrom).
func backfillTable(ctx context.Context, c *cli.Context, source string, rel *decode.Relation, sink *iceberg.Sink, keepalive func() error, resumeFrom decode.LSN, log *slog.Logger) error {
	if c.String("backfill") == "skip" {
		log.Info("backfill skipped", "table", rel.QualifiedName())
		return sink.FinishCopy(ctx, rel.ID, 0)
	}
	cfg := copyConfig(c, source, keepalive)
	cfg.ResumeFrom = resumeFrom
	return replication.SyncTable(ctx, rel, copySink{sink}, cfg, log)
}

// copySink adapts the iceberg sink's copy writers to replication's
// interface, keeping replication free of the iceberg package.
type copySink struct{ *iceberg.Sink }

func (c copySink) NewCopyWriter(relID uint32) (replication.RowWriter, error) {
	return c.Sink.NewCopyWriter(relID)
}

func (c copySink) BeginCopy(ctx context.Context, rel *decode.Relation, attnums map[int]string, lsn, resumeFrom decode.LSN, sizeHint int64) ([][2]int64, int64, error) {
	r, err := c.Sink.BeginCopy(ctx, rel, attnums, lsn, resumeFrom, sizeHint)
	return r.Done, r.Rows, err
}

func (c copySink) ChunkDone(ctx context.Context, relID uint32, w replication.RowWriter, from, to int64) error {
	cw, _ := w.(*iceberg.CopyWriter)
	return c.Sink.ChunkDone(ctx, relID, cw, from, to)
}

func (c copySink) AbortCopy(relID uint32) { c.Sink.AbortCopy(relID) }

func copyConfig(c *cli.Context, source string, keepalive func() error) replication.CopyConfig {
	return replication.CopyConfig{SourceURL: source, Workers: c.Int("backfill-workers"), Keepalive: keepalive, OnProgress: backfillProgress.set, Terminal: stderrTerminal}
}

// reconnect opens a new replication connection, waiting with exponential
// backoff (at most 30s) between attempts until ctx is done.
func reconnect(ctx context.Context, source string, backoff *time.Duration, log *slog.Logger) (*pgconn.PgConn, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(*backoff):
		}
		conn, err := replication.ConnectReplication(ctx, source)
		if err == nil {
			*backoff = time.Second
			log.Info("reconnected")
			return conn, nil
		}
		*backoff = min(*backoff*2, 30*time.Second)
		log.Warn("reconnect failed", "error", err, "next_attempt_in", *backoff)
	}
}

func backfillCmd(c *cli.Context) error {
	overrides, err := loadOverrides(c)
	if err != nil {
		return err
	}
	log := newLogger(c)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	source, pub, want := c.String(flagSource.Name), c.String(flagPublication.Name), c.String("table")
	slot, err := slotName(c)
	if err != nil {
		return err
	}
	// Before anything is created (the slot, the catalog file).
	if err := iceberg.CheckWarehouse(ctx, catalogConfig(c), true); err != nil {
		return err
	}
	conn, err := replication.Connect(ctx, source)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := replication.Lease(ctx, conn, slot); err != nil {
		return fmt.Errorf("stop the running bridge before a backfill: %w", err)
	}
	info, err := replication.LookupSlot(ctx, conn, slot)
	if err != nil {
		return fmt.Errorf("slot %s: %w: run the bridge once first", slot, err)
	}
	rels, held, err := replication.PreflightStart(ctx, conn, pub, overrides, true, log)
	if err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	var rel *decode.Relation
	for _, r := range rels {
		if r.QualifiedName() == want {
			rel = r
		}
	}
	for _, u := range held {
		if u.Table == want {
			return fmt.Errorf("preflight failed:\n%w", u.Err)
		}
	}
	if rel == nil {
		return fmt.Errorf("table %s is not in publication %s", want, pub)
	}
	repl, err := replication.ConnectReplication(ctx, source)
	if err != nil {
		return err
	}
	sys, err := replication.Identify(ctx, repl)
	repl.Close(context.Background())
	if err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, catalogConfig(c))
	if err != nil {
		return err
	}
	defer closeCatalog(cat, log)
	sink := iceberg.NewSink(cat, iceberg.Config{Source: iceberg.SourceID{SystemID: sys.SystemID, Database: sys.Database, Slot: slot}}, log)
	if err := sink.CheckNames(rels); err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	attnums, err := replication.AttNums(ctx, conn, rel.ID)
	if err != nil {
		return err
	}
	if err := sink.FollowKeyRenames(ctx, rel, attnums); err != nil {
		return err
	}
	if err := addTable(ctx, conn, sink, rel); err != nil {
		return err
	}
	if _, err := staleTables(ctx, c, sink, rels, slot, info.ConfirmedFlush, log); err != nil {
		return err
	}
	if !rel.HasKey() {
		return alignKeyless(ctx, sink, rel, attnums, log)
	}
	if err := backfillTable(ctx, c, source, rel, sink, nil, 0, log); err != nil {
		return err
	}
	return sink.SaveIndexes()
}

func statusCmd(c *cli.Context) error {
	// status reports state: it checks no types of mirrored tables, so it
	// needs neither --config nor a table every rule makes mappable. Only a
	// table with no Iceberg table is checked (see tableStatus).
	ctx := c.Context
	source, pub := c.String(flagSource.Name), c.String(flagPublication.Name)
	slot, err := slotName(c)
	if err != nil {
		return err
	}
	conn, err := replication.Connect(ctx, source)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	info, err := replication.LookupSlot(ctx, conn, slot)
	switch {
	case errors.Is(err, replication.ErrNoSlot):
		fmt.Printf("slot %s: does not exist (the bridge has not started)\n", slot)
	case err != nil:
		return err
	default:
		fmt.Printf("slot %s: confirmed_flush_lsn %s, current WAL %s, lag %d bytes, active %t\n",
			slot, info.ConfirmedFlush, info.CurrentWAL, info.LagBytes(), info.Active)
	}
	rels, err := replication.PublishedTables(ctx, conn, pub)
	if err != nil {
		return err
	}
	if err := iceberg.CheckWarehouse(ctx, catalogConfig(c), false); err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, catalogConfig(c))
	if err != nil {
		return err
	}
	defer closeCatalog(cat, newLogger(c))
	overrides, err := loadOverrides(c) // only to check tables not mirrored yet
	if err != nil {
		return err
	}
	check := statusCheck(ctx, conn, pub, overrides)
	var lines []string
	for _, rel := range rels {
		l, err := tableStatus(ctx, cat, rel, info.ConfirmedFlush, check)
		if err != nil {
			return err
		}
		lines = append(lines, l...)
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	return nil
}

// The sink applies streamed transactions ahead of their commit.
var _ replication.Speculator = (*iceberg.Sink)(nil)
