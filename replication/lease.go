package replication

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// leaseClass is the first key of the bridge's advisory lock ("pg2i"); the
// second is a hash of the slot name. Advisory locks belong to a database,
// so the lock is keyed by the source database and the slot.
const leaseClass = 0x70673269

// leaseWait is how long a start waits for a lease held by someone else:
// the session of a bridge killed a moment ago ends when the server sees its
// socket close, and a supervisor may restart the bridge before that.
const leaseWait = 5 * time.Second

// leaseKey is the lock's second key for a slot.
func leaseKey(slot string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(slot))
	return h.Sum32()
}

// Lease makes this process the only writer for a slot and its warehouse,
// before anything is written: it takes a session advisory lock on conn (the
// bridge's SQL connection, held until it closes), then checks that no
// process that takes no lock (an older bridge, pg_recvlogical) streams the
// slot. A holder that stays longer than a few seconds is an *InUseError
// naming it. Call Relock when conn is replaced.
func Lease(ctx context.Context, conn *pgx.Conn, slot string) error {
	if err := Relock(ctx, conn, slot); err != nil {
		return err
	}
	return waitFree(ctx, func() (int32, error) {
		var pid *int32
		err := conn.QueryRow(ctx, `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) || pid == nil {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("look up slot %q: %w", slot, err)
		}
		return *pid, nil
	}, func(pid int32) error {
		return inUse(ctx, conn, slot, pid, "is streamed by another process")
	})
}

// Relock takes the lease's advisory lock on a new SQL connection (after the
// old one was lost with its lock): an error if another bridge took it in
// the meantime.
func Relock(ctx context.Context, conn *pgx.Conn, slot string) error {
	name := "pg2iceberg"
	if host, err := os.Hostname(); err == nil {
		name = fmt.Sprintf("pg2iceberg pid %d on %s", os.Getpid(), host)
	}
	if _, err := conn.Exec(ctx, `SELECT set_config('application_name', left($1, 63), false)`, name); err != nil {
		return fmt.Errorf("set application_name: %w", err)
	}
	key := leaseKey(slot)
	return waitFree(ctx, func() (int32, error) {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, int32(leaseClass), int32(key)).Scan(&got); err != nil {
			return 0, fmt.Errorf("lock slot %q: %w", slot, err)
		}
		if got {
			return 0, nil
		}
		var pid int32
		err := conn.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 2 LIMIT 1`,
			int64(leaseClass), int64(key)).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			return -1, nil // released since: try again
		}
		if err != nil {
			return 0, fmt.Errorf("look up the holder of slot %q: %w", slot, err)
		}
		return pid, nil
	}, func(pid int32) error {
		return inUse(ctx, conn, slot, pid, "is in use by another pg2iceberg")
	})
}

// waitFree calls holder until it reports no holder (0), for at most
// leaseWait; then taken describes the last holder as the error. A holder of
// -1 means "unknown, try again".
func waitFree(ctx context.Context, holder func() (int32, error), taken func(pid int32) error) error {
	deadline := time.Now().Add(leaseWait)
	for {
		pid, err := holder()
		if err != nil || pid == 0 {
			return err
		}
		if pid > 0 && time.Now().After(deadline) {
			return taken(pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// InUseError is a slot another process holds.
type InUseError struct {
	Slot string
	What string // "is in use by another pg2iceberg", ...
	// The holder's session as pg_stat_activity shows it (empty fields are
	// hidden from this role).
	PID         int32
	Application string
	Client      string
	Since       time.Time
}

func (e *InUseError) Error() string {
	s := fmt.Sprintf("slot %q %s (two writers would commit every change twice): server pid %d", e.Slot, e.What, e.PID)
	if e.Application != "" {
		s += fmt.Sprintf(", application_name %q", e.Application)
	}
	if e.Client != "" {
		s += ", client " + e.Client
	}
	if !e.Since.IsZero() {
		s += ", connected since " + e.Since.UTC().Format(time.RFC3339)
	}
	return s + fmt.Sprintf("; stop it first, or if it no longer runs end its session: SELECT pg_terminate_backend(%d);", e.PID)
}

// inUse describes the session pid from pg_stat_activity.
func inUse(ctx context.Context, conn *pgx.Conn, slot string, pid int32, what string) error {
	e := &InUseError{Slot: slot, What: what, PID: pid}
	var app, client *string
	var since *time.Time
	err := conn.QueryRow(ctx, `SELECT application_name, COALESCE(host(client_addr), CASE WHEN backend_start IS NOT NULL THEN 'local socket' END), backend_start
		FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&app, &client, &since)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w (and looking up its session failed: %w)", e, err)
	}
	if app != nil {
		e.Application = *app
	}
	if client != nil {
		e.Client = *client
	}
	if since != nil {
		e.Since = *since
	}
	return e
}

// startError explains a failed START_REPLICATION; a slot another process
// streams (SQLSTATE 55006: one that took no lease, see Lease) is named so.
func startError(slot string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55006" {
		return fmt.Errorf("start replication on slot %q: another process streams it (the server says: %s): stop it (another bridge, pg_recvlogical), or give this bridge its own --slot", slot, pgErr.Message)
	}
	if errors.As(err, &pgErr) && pgErr.Code == "55000" && (strings.Contains(pgErr.Message, "can no longer get changes") || strings.Contains(pgErr.Message, "cannot read from logical replication slot")) {
		// Invalidated (see SlotInfo.Lost) while the bridge ran: the words
		// of PostgreSQL 16 and later, and of 13 to 15.
		return &SlotLostError{Slot: slot, Reason: "the server says: " + pgErr.Message}
	}
	return fmt.Errorf("start replication on slot %q: %w", slot, err)
}
