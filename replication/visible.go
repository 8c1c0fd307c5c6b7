package replication

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// visibleSQL reports whether transaction $1 (a 32-bit XID, as pgoutput
// sends it) has ended for a snapshot taken now: committed or aborted, so
// a query run after it sees what it did. The XID is widened to the xid8
// of the current epoch, or of the previous one when its low half is past
// the snapshot's xmax (it was assigned before the wrap).
const visibleSQL = `SELECT pg_visible_in_snapshot(
	(GREATEST(0, (pg_snapshot_xmax(s)::text::bigint >> 32)
		- CASE WHEN $1::bigint >= (pg_snapshot_xmax(s)::text::bigint & 4294967295) THEN 1 ELSE 0 END) << 32
	 | $1::bigint)::text::xid8, s)
FROM pg_current_snapshot() s`

// WaitVisible returns once transaction xid, whose changes the stream
// has, is visible to conn's new snapshots. The walsender sends a
// transaction once its commit record is flushed, which is before
// PostgreSQL shows the commit to other sessions (and, under synchronous
// replication, before a standby has confirmed it, which may take as long
// as the standby is away). A catalog lookup made for what the
// transaction did (a table it added to the publication, a column, a key)
// would otherwise see the state before it and take a new table as gone.
// keepalive is called while it waits, so the replication connection is
// not timed out; a wait of over a second is logged once.
func WaitVisible(ctx context.Context, conn *pgx.Conn, xid uint32, keepalive func() error, log *slog.Logger) error {
	if xid == 0 {
		return nil
	}
	start := time.Now()
	pause, logged, lastKeepalive := 10*time.Millisecond, false, time.Now()
	for {
		var visible bool
		if err := conn.QueryRow(ctx, visibleSQL, int64(xid)).Scan(&visible); err != nil {
			return fmt.Errorf("check that transaction %d is visible: %w", xid, err)
		}
		if visible {
			if logged {
				log.Info("transaction visible", "xid", xid, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if !logged && time.Since(start) > time.Second {
			log.Info("waiting for a received transaction to become visible before reading the catalog (a synchronous standby may hold its commit)", "xid", xid)
			logged = true
		}
		if keepalive != nil && time.Since(lastKeepalive) > 5*time.Second {
			if err := keepalive(); err != nil {
				return err
			}
			lastKeepalive = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}
