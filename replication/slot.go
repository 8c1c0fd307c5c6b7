package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// System is what IDENTIFY_SYSTEM says of the source.
type System struct {
	SystemID string
	Database string
	WALEnd   decode.LSN
}

// Identify runs IDENTIFY_SYSTEM on a replication connection.
func Identify(ctx context.Context, conn *pgconn.PgConn) (System, error) {
	r, err := pglogrepl.IdentifySystem(ctx, conn)
	if err != nil {
		return System{}, fmt.Errorf("identify system: %w", err)
	}
	return System{SystemID: r.SystemID, Database: r.DBName, WALEnd: r.XLogPos}, nil
}

// SlotInfo describes an existing replication slot.
type SlotInfo struct {
	Plugin         string
	Database       string
	Active         bool
	ConfirmedFlush decode.LSN
	CurrentWAL     decode.LSN
}

// LagBytes is how much WAL the slot holds back.
func (s SlotInfo) LagBytes() int64 {
	if s.CurrentWAL < s.ConfirmedFlush {
		return 0
	}
	return int64(s.CurrentWAL - s.ConfirmedFlush)
}

// ErrNoSlot is returned by LookupSlot for a slot that does not exist.
var ErrNoSlot = errors.New("replication slot does not exist")

// LookupSlot reads a slot's state.
func LookupSlot(ctx context.Context, conn *pgx.Conn, slot string) (SlotInfo, error) {
	var s SlotInfo
	var confirmed, current *string
	err := conn.QueryRow(ctx, `
		SELECT plugin, database, active, confirmed_flush_lsn::text, pg_current_wal_lsn()::text
		FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&s.Plugin, &s.Database, &s.Active, &confirmed, &current)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrNoSlot
	}
	if err != nil {
		return s, fmt.Errorf("look up slot %q: %w", slot, err)
	}
	if confirmed != nil {
		if s.ConfirmedFlush, err = pglogrepl.ParseLSN(*confirmed); err != nil {
			return s, fmt.Errorf("slot %q: %w", slot, err)
		}
	}
	if current != nil {
		if s.CurrentWAL, err = pglogrepl.ParseLSN(*current); err != nil {
			return s, fmt.Errorf("slot %q: %w", slot, err)
		}
	}
	return s, nil
}

// NewSlot is a slot just created with an exported snapshot. The snapshot
// stays usable until the next command on the replication connection.
type NewSlot struct {
	ConsistentPoint decode.LSN
	SnapshotName    string
}

// CreateSlot creates a pgoutput slot and exports its snapshot.
func CreateSlot(ctx context.Context, conn *pgconn.PgConn, slot string) (NewSlot, error) {
	r, err := pglogrepl.CreateReplicationSlot(ctx, conn, slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return NewSlot{}, fmt.Errorf("create replication slot %q: %w", slot, err)
	}
	lsn, err := pglogrepl.ParseLSN(r.ConsistentPoint)
	if err != nil {
		return NewSlot{}, fmt.Errorf("create replication slot %q: %w", slot, err)
	}
	return NewSlot{ConsistentPoint: lsn, SnapshotName: r.SnapshotName}, nil
}

// DropSlot drops a slot.
func DropSlot(ctx context.Context, conn *pgx.Conn, slot string) error {
	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot); err != nil {
		return fmt.Errorf("drop replication slot %q: %w", slot, err)
	}
	return nil
}
