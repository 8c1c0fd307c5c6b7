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
	// WALStatus is pg_replication_slots.wal_status ("lost": the server
	// removed WAL the slot needs), and Invalidation its
	// invalidation_reason (PostgreSQL 17 and later; "" before).
	WALStatus    string
	Invalidation string
}

// Lost reports whether the server invalidated the slot: the WAL it needs
// is gone (max_slot_wal_keep_size, or a reason of PostgreSQL 17), so no
// change after its confirmed position can be streamed from it again.
func (s SlotInfo) Lost() bool { return s.WALStatus == "lost" || s.Invalidation != "" }

// LostReason says why the slot was invalidated, for errors and status.
func (s SlotInfo) LostReason() string {
	if s.Invalidation != "" {
		return "invalidation_reason " + s.Invalidation
	}
	return "wal_status lost: the WAL it needs was removed (max_slot_wal_keep_size)"
}

// SlotLostError is a slot the server invalidated, found at the start
// (SlotInfo.Lost) or when the stream starts on it: streaming on would
// lose the changes since its confirmed position.
type SlotLostError struct {
	Slot   string
	Reason string     // SlotInfo.LostReason, or what the server said
	From   decode.LSN // the slot's confirmed position, when known
}

func (e *SlotLostError) Error() string {
	at := ""
	if e.From != 0 {
		at = " at or after " + e.From.String()
	}
	return fmt.Sprintf("slot %q was invalidated by the server (%s)%s: the changes since are gone, so streaming on would lose them. "+
		"Start the bridge with --on-slot-lost=recopy to drop the slot, create it again and copy every table again (the changelogs then lack the changes in between), "+
		"and raise max_slot_wal_keep_size (or keep the bridge running) so that it does not happen again", e.Slot, e.Reason, at)
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
	var confirmed, current, walStatus, invalidation *string
	// invalidation_reason is read through to_jsonb: the column is new in
	// PostgreSQL 17.
	err := conn.QueryRow(ctx, `
		SELECT plugin, database, active, confirmed_flush_lsn::text, pg_current_wal_lsn()::text,
			wal_status, to_jsonb(s)->>'invalidation_reason'
		FROM pg_replication_slots s WHERE slot_name = $1`, slot).Scan(&s.Plugin, &s.Database, &s.Active, &confirmed, &current, &walStatus, &invalidation)
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
	if walStatus != nil {
		s.WALStatus = *walStatus
	}
	if invalidation != nil {
		s.Invalidation = *invalidation
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
