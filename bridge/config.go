package bridge

import (
	"log/slog"
	"time"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/replication"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Config configures Run, Backfill and Status. The zero value of each
// optional field is safe: no metrics, no catalog server, no progress bars,
// the sink's default batch limits.
type Config struct {
	// Source is the PostgreSQL connection string of the source database.
	Source string
	// Publication is the publication streamed.
	Publication string
	// Slot is the replication slot, created when missing; the lease is
	// keyed by it (see replication.Lease).
	Slot string
	// Catalog is the warehouse and its catalog.
	Catalog iceberg.CatalogConfig
	// Rules are the configuration file's type mapping rules and table
	// policies (nil: none).
	Rules *mapping.Overrides

	// NoChangelog turns the changelog tables off (see iceberg.Config).
	NoChangelog bool
	// ConsistentTag moves a tag "consistent" on every table to the newest
	// complete cut after each flush (see iceberg.Config).
	ConsistentTag bool
	// FlushRows, FlushBytes and FlushInterval bound a batch (see
	// iceberg.Config; 0: the sink's defaults).
	FlushRows     int
	FlushBytes    int64
	FlushInterval time.Duration
	// Retention is the snapshot retention of tables the configuration
	// file gives none (zero: each table's history.expire.* properties).
	Retention tiering.Retention
	// SpoolDir holds large in-progress transactions ("": the system temp
	// dir).
	SpoolDir string
	// ReceiveTimeout bounds the server's silence on the replication
	// connection before it is taken as lost (see
	// replication.StreamConfig; 0: the default).
	ReceiveTimeout time.Duration
	// KeyIndex bounds the memory of each mirror's key index (see
	// iceberg.KeyIndexConfig; zero: all in memory).
	KeyIndex iceberg.KeyIndexConfig

	// SkipCopy marks tables copied without copying them, so that only
	// changes from now on apply (run --backfill=skip).
	SkipCopy bool
	// CopyWorkers is how many connections copy a table in parallel
	// (default 1).
	CopyWorkers int
	// RecopyStale copies a table again whose catalog entry is behind what
	// the slot confirmed (a catalog restored from an older copy) instead
	// of stopping the start with what to run (see staleTables).
	RecopyStale bool
	// RecopySlotLost drops a slot the server invalidated (see
	// replication.SlotInfo.Lost), creates it again and copies every table
	// again, instead of stopping the start with what to do.
	RecopySlotLost bool

	// MetricsAddr, when set, serves /metrics, /status and /healthz there.
	MetricsAddr string
	// CatalogServer, when set, serves the warehouse as a read-only Iceberg
	// REST catalog while the bridge runs.
	CatalogServer *CatalogServerConfig
	// Terminal, when set, is where the log goes, with each copy's progress
	// bar on its last line; otherwise progress is logged.
	Terminal *replication.Terminal
	// Log receives the bridge's messages (nil: slog.Default()).
	Log *slog.Logger
}

// logOr is log, or slog.Default() for nil.
func logOr(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}

// sourceConfig is what the bridge's SQL session reads.
func (c Config) sourceConfig() replication.SourceConfig {
	return replication.SourceConfig{URL: c.Source, Slot: c.Slot, Publication: c.Publication, Overrides: c.Rules}
}
