package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// SyncTable copies one table while the main slot's stream waits, the way
// PostgreSQL's own table synchronisation does: a temporary slot exports a
// snapshot at LSN L, the table is copied inside it and committed with
// watermark L, so the main stream's changes to the table that commit below
// L are skipped (they are in the copy) and later ones are applied.
//
// It serves tables added to the publication while streaming, and tables
// whose copy did not complete before a restart. cfg.Keepalive, when set,
// is called during the copy so the main replication connection is not timed
// out by the server.
func SyncTable(ctx context.Context, rel *decode.Relation, sink CopySink, cfg CopyConfig, log *slog.Logger) error {
	if skipKeyless(rel, log) {
		return nil // no temporary slot for nothing to copy
	}
	repl, err := ConnectReplication(ctx, cfg.SourceURL)
	if err != nil {
		return err
	}
	defer repl.Close(context.Background())
	name := "pg2iceberg_sync_" + strconv.FormatUint(uint64(rel.ID), 10) + "_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	r, err := pglogrepl.CreateReplicationSlot(ctx, repl, name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return fmt.Errorf("create temporary slot to copy %s: %w", rel.QualifiedName(), err)
	}
	lsn, err := pglogrepl.ParseLSN(r.ConsistentPoint)
	if err != nil {
		return fmt.Errorf("create temporary slot to copy %s: %w", rel.QualifiedName(), err)
	}
	log.Info("table sync started", "table", rel.QualifiedName(), "snapshot_lsn", lsn)
	start := time.Now()
	slot := NewSlot{ConsistentPoint: lsn, SnapshotName: r.SnapshotName}
	if err := CopyTables(ctx, slot, []*decode.Relation{rel}, sink, cfg, log); err != nil {
		return err
	}
	log.Info("table sync finished", "table", rel.QualifiedName(), "lsn", lsn, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}
