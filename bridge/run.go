package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// The iceberg sink is what the stream, the copies and the speculation
// take, and the SQL session is what the sink and the stream look up.
var (
	_ replication.Sink        = (*iceberg.Sink)(nil)
	_ replication.Speculator  = (*iceberg.Sink)(nil)
	_ replication.CopySink    = copySink{}
	_ iceberg.ColumnDescriber = (*replication.Source)(nil)
	_ replication.DDLKeys     = (*replication.Source)(nil)
)

// bridge is one run's state. Its methods run on the run's goroutine,
// except the servers', which read only what is safe to read concurrently
// (progress, copies, the sink's Stats).
type bridge struct {
	cfg      Config
	log      *slog.Logger
	g        *errgroup.Group       // every goroutine the run starts
	progress *replication.Progress // the stream's position and the run's phase
	copies   *copyProgress         // every copy's progress, for /metrics and /status
	stats    *iceberg.Stats        // every sink's counters, for /metrics and /status
	src      *replication.Source   // the SQL session, holding the lease
	repl     *pgconn.PgConn        // the replication connection, replaced by a reconnect
	systemID string                // the source's system identifier, checked after each reconnect
	sink     *iceberg.Sink         // replaced after a connection lost inside a transaction
}

func newBridge(cfg Config, g *errgroup.Group) *bridge {
	return &bridge{cfg: cfg, log: logOr(cfg.Log), g: g, progress: &replication.Progress{}, copies: newCopyProgress(), stats: &iceberg.Stats{}}
}

// errStopped is a copy stopped by ctx (SIGINT, SIGTERM): the run ends
// cleanly, and the next start copies what is missing.
var errStopped = errors.New("stopped during a copy")

// Run is the bridge's whole life: it checks the warehouse, connects and
// takes the lease, runs the preflight, opens the catalog and the tables,
// checks them against the slot, copies what needs a copy, then streams
// until ctx is done, surviving a lost connection at any point (see serve),
// and at the end commits what is pending, acknowledges it and saves the
// key indexes. Every goroutine it starts (the stream's, the metrics and
// catalog servers') belongs to one errgroup, joined before it returns.
func Run(ctx context.Context, cfg Config) error {
	g, gctx := errgroup.WithContext(ctx)
	b := newBridge(cfg, g)
	g.Go(func() error { return b.run(gctx) })
	return g.Wait()
}

func (b *bridge) run(ctx context.Context) error {
	return b.startErr(ctx, b.start(ctx))
}

// startErr is the error of the run's start, taken as a stop when ctx is
// done: a SIGTERM or SIGINT during the start (a supervisor that changed its
// mind, a deploy rolled back) cancels the step under way, which fails as a
// closed connection or a cancelled query. Nothing of a step cut short is
// acknowledged, so the bridge stops as asked, exit 0, saying where, instead
// of exiting 1 with "preflight failed: ... conn closed" (seen by the
// randomized crash driver). An error after the start (serve's) is
// serve's to judge.
func (b *bridge) startErr(ctx context.Context, err error) error {
	var started *serveError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &started):
		return started.err
	case ctx.Err() != nil:
		b.log.Info("stopped during the start", "step", err)
		return nil
	}
	return err
}

// serveError is an error from serve, past the start.
type serveError struct{ err error }

func (e *serveError) Error() string { return e.err.Error() }

// start runs the start (lease, preflight, connections, catalog), then
// serve, whose error comes back as a serveError.
func (b *bridge) start(ctx context.Context) error {
	// Metrics, status and health from the first second: through the
	// preflight, the key indexes' loading and the first copy.
	if addr := b.cfg.MetricsAddr; addr != "" {
		stop, err := b.serveMetrics(addr)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Before anything is created (the slot, the catalog file).
	if err := iceberg.CheckWarehouse(ctx, b.cfg.Catalog, true); err != nil {
		return err
	}
	src, err := replication.OpenSource(ctx, b.cfg.sourceConfig())
	if err != nil {
		return err
	}
	b.src = src
	defer src.Close() // its connection is reopened after a lost connection
	if err := src.Lease(ctx); err != nil {
		return err
	}
	release, err := b.holdWriterLease(ctx)
	if err != nil {
		return err
	}
	defer release()
	rels, held, err := b.preflight(ctx)
	if err != nil {
		return err
	}
	if b.repl, err = replication.ConnectReplication(ctx, b.cfg.Source); err != nil {
		return err
	}
	defer func() { b.closeRepl() }()
	sys, err := replication.Identify(ctx, b.repl)
	if err != nil {
		return err
	}
	b.systemID = sys.SystemID
	cat, err := iceberg.OpenCatalog(ctx, b.cfg.Catalog)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, b.log)
	if cs := b.cfg.CatalogServer; cs != nil {
		stop, err := startCatalogServer(ctx, b.g, *cs)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := b.serve(ctx, cat, sys, rels, held); err != nil {
		return &serveError{err}
	}
	return nil
}

// preflight checks the publication's tables (see PreflightStart): the
// tables to mirror, and those held because they cannot be mirrored.
func (b *bridge) preflight(ctx context.Context) ([]*decode.Relation, []*replication.UnmirrorableError, error) {
	_, noSlot := replication.LookupSlot(ctx, b.src.Conn(), b.cfg.Slot)
	rels, held, err := replication.PreflightStart(ctx, b.src.Conn(), b.cfg.Publication, b.cfg.Rules, noSlot == nil, b.log)
	if err != nil {
		return nil, nil, fmt.Errorf("preflight failed:\n%w", err)
	}
	return rels, held, nil
}

// attempt opens the tables in a new sink, copies what needs a copy and
// streams until ctx is done, then commits what is pending (see shutdown).
func (b *bridge) attempt(ctx context.Context, cat catalog.Catalog, sys replication.System, rels []*decode.Relation, held []*replication.UnmirrorableError) error {
	b.sink = iceberg.NewSink(cat, iceberg.Config{
		Source:        b.sourceID(sys),
		NoChangelog:   b.cfg.NoChangelog,
		ConsistentTag: b.cfg.ConsistentTag,
		FlushRows:     b.cfg.FlushRows,
		FlushBytes:    b.cfg.FlushBytes,
		FlushInterval: b.cfg.FlushInterval,
		Columns:       b.src,
		Rules:         b.cfg.Rules,
		Retention:     b.cfg.Retention,
		Stats:         b.stats,
		KeyIndex:      b.cfg.KeyIndex,
	}, b.log)
	if err := b.openTables(ctx, rels, rels); err != nil {
		return err
	}
	if err := b.holdTables(ctx, cat, held); err != nil {
		return err
	}
	start, err := b.prepare(ctx, rels)
	if errors.Is(err, errStopped) {
		return nil
	}
	if err != nil {
		return err
	}
	if start, err = b.stream(ctx, start); err != nil {
		return err
	}
	return b.shutdown(start)
}

func (b *bridge) sourceID(sys replication.System) iceberg.SourceID {
	return iceberg.SourceID{SystemID: sys.SystemID, Database: sys.Database, Slot: b.cfg.Slot}
}

// openTables checks the names of every published table (rels) and opens
// the Iceberg tables of those in open.
func (b *bridge) openTables(ctx context.Context, rels, open []*decode.Relation) error {
	if err := b.sink.CheckNames(rels); err != nil {
		return fmt.Errorf("preflight failed:\n%w", err)
	}
	for _, rel := range open {
		if err := b.addTable(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// addTable opens a table's Iceberg tables and records its attnums for the
// DDL capture.
func (b *bridge) addTable(ctx context.Context, rel *decode.Relation) error {
	if err := b.sink.AddTable(ctx, rel); err != nil {
		return err
	}
	attnums, err := b.src.AttNums(ctx, rel.ID)
	if err != nil {
		return err
	}
	return b.sink.InitAttNums(ctx, rel.ID, attnums)
}

// stream streams from start until ctx is done. A connection lost between
// transactions is survived: what arrived is committed, the replication
// connection opened again (and the SQL session, when the server dropped it
// too), and the stream resumes from what is durable. It returns where the
// last session started.
func (b *bridge) stream(ctx context.Context, start decode.LSN) (decode.LSN, error) {
	backoff := time.Second
	for {
		err := b.session(ctx, start)
		var replay *iceberg.ReplayError
		if errors.As(err, &replay) && !b.sink.InTransaction() {
			// An outside commit moved rows of a mirror: its batch was
			// dropped and its key index rebuilt; the stream resumes from
			// what is durable, and the watermarks skip what was committed.
			b.log.Info("resuming the stream after an outside commit", "tables", replay.Tables, "from", replay.From)
			quick := 100 * time.Millisecond
			if err := b.reconnect(ctx, &quick); err != nil {
				return start, err
			}
			start = max(start, b.sink.Durable(), b.progress.Acked())
			continue
		}
		var retry interface{ Retryable() bool }
		if err == nil || !errors.As(err, &retry) || !retry.Retryable() || b.sink.InTransaction() {
			return start, err
		}
		// Between transactions: commit what arrived, then resume from it.
		b.log.Warn("replication connection lost; reconnecting", "error", err, "backoff", backoff)
		b.progress.SetPhase(replication.PhaseReconnecting, err.Error())
		if err := b.sink.Flush(ctx); err != nil {
			return start, err
		}
		if err := b.reconnect(ctx, &backoff); err != nil {
			return start, err
		}
		// A server restart drops the SQL connection too (table syncs and
		// column descriptions use it): reopen it as well.
		if err := b.src.Reopen(ctx, b.log); err != nil {
			return start, err
		}
		start = max(start, b.sink.Durable(), b.progress.Acked())
	}
}

// reconnect replaces the replication connection: it opens a new one,
// waiting with exponential backoff (at most 30s) between attempts until ctx
// is done, and checks with IDENTIFY_SYSTEM that the server is still the
// cluster the run started on. A DNS name or a virtual IP moved to another
// cluster (a failover to a server that is not a physical replica, a
// restored backup) would otherwise stream another cluster's WAL from the
// same slot name into the mirrors: that is an error for a human.
func (b *bridge) reconnect(ctx context.Context, backoff *time.Duration) error {
	b.closeRepl()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*backoff):
		}
		conn, err := replication.ConnectReplication(ctx, b.cfg.Source)
		if err == nil {
			var sys replication.System
			if sys, err = replication.Identify(ctx, conn); err == nil {
				if sys.SystemID != b.systemID {
					conn.Close(context.Background())
					return fmt.Errorf("after a reconnect the source is another PostgreSQL cluster (system identifier %s, the run started on %s): "+
						"the address now reaches a different server, whose WAL is not the one the slot and the mirrors follow; "+
						"point the source back at the original cluster, or, to follow the new one, drop the mirrors (or use a new warehouse) and start again so that they are copied from it",
						sys.SystemID, b.systemID)
				}
				*backoff = time.Second
				b.repl = conn
				b.log.Info("reconnected")
				return nil
			}
			conn.Close(context.Background())
			if !replication.ConnLost(err) {
				return err
			}
		}
		*backoff = min(*backoff*2, 30*time.Second)
		b.log.Warn("reconnect failed", "error", err, "next_attempt_in", *backoff)
	}
}

// closeRepl closes the replication connection, if one is open.
func (b *bridge) closeRepl() {
	if b.repl != nil {
		b.repl.Close(context.Background())
		b.repl = nil
	}
}

// shutdown ends a run stopped between transactions: it commits what is
// pending, acknowledges it and saves the key indexes.
func (b *bridge) shutdown(start decode.LSN) error {
	b.progress.SetPhase(replication.PhaseStopping, "")
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var replay *iceberg.ReplayError
	if err := b.sink.Flush(fctx); errors.As(err, &replay) {
		// Not acknowledged: the next start streams the dropped batch again.
		b.log.Info("outside commit at shutdown: the next start replays the dropped batch", "tables", replay.Tables, "from", replay.From)
	} else if err != nil {
		return err
	}
	if err := replication.FinalStatus(fctx, b.repl, b.sink.Durable()); err != nil {
		return err
	}
	if err := b.sink.SaveIndexes(); err != nil {
		// Only a cache: the next start rebuilds it from the tables.
		b.log.Warn("key index not saved", "error", err)
	}
	b.log.Info("stopped", "lsn", max(start, b.sink.Durable(), b.progress.Acked()))
	return nil
}

// closeCatalog closes the catalog at exit; the embedded SQLite catalog is
// checkpointed, so catalog.db alone is a complete copy after a clean stop.
func closeCatalog(cat catalog.Catalog, log *slog.Logger) {
	if err := iceberg.CloseCatalog(cat); err != nil {
		log.Warn("catalog not closed cleanly; back up catalog.db together with catalog.db-wal", "error", err)
	}
}
