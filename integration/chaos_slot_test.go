package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

const slotLostSchema = `CREATE TABLE a (id int PRIMARY KEY, v text);
	CREATE TABLE filler (id bigserial PRIMARY KEY, pad text);
	INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 1000) g;
	CREATE PUBLICATION sl_pub FOR TABLE a;`

const slotLostSlot = "pg2iceberg_sl_pub"

// invalidateSlot writes WAL past max_slot_wal_keep_size (to a table the
// publication leaves out), switching segments and checkpointing, until the
// server has invalidated the slot (wal_status lost).
func invalidateSlot(t *testing.T, conn *pgx.Conn, slot string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 40; i++ {
		var status *string
		if err := conn.QueryRow(ctx, `SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != nil && *status == "lost" {
			t.Logf("slot %s lost after %d segment switches", slot, i)
			return
		}
		exec1(t, conn, `INSERT INTO filler (pad) SELECT repeat('x', 1000) FROM generate_series(1, 4000)`)
		exec1(t, conn, `SELECT pg_switch_wal()`)
		exec1(t, conn, `CHECKPOINT`)
	}
	t.Fatalf("slot %s not invalidated after 40 segment switches", slot)
}

// A slot the server invalidated while the bridge was stopped
// (max_slot_wal_keep_size) is never streamed from silently: status says it
// is lost and what to run, a start fails with the same, and a start with
// --on-slot-lost=recopy drops and creates the slot and copies the table
// again, so the mirror holds the changes made while the slot was lost.
func TestSlotLost(t *testing.T) {
	t.Parallel()
	pg, conn := startSourceWith(t, map[string]string{"max_slot_wal_keep_size": "1MB"}, slotLostSchema)
	tg := localTarget(t)
	args := runArgs(pg, "sl_pub", tg)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, slotLostSlot, b)
	exec1(t, conn, `UPDATE a SET v = 'streamed' WHERE id <= 10`)
	waitCaughtUp(t, conn, slotLostSlot, b)
	b.stop(t)

	// Changes the lost slot would have carried: only a new copy has them.
	exec1(t, conn, `DELETE FROM a WHERE id % 7 = 0`)
	exec1(t, conn, `UPDATE a SET v = 'while lost' WHERE id % 5 = 0`)
	exec1(t, conn, `INSERT INTO a SELECT g, 'new' FROM generate_series(2000, 2099) g`)
	invalidateSlot(t, conn, slotLostSlot)

	out, err := runOnce(t, append([]string{"status", "--source", pg.SuperURL("postgres"), "--publication", "sl_pub"}, tg.args()...)...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	for _, w := range []string{"slot " + slotLostSlot + ": LOST", "wal_status lost", "--on-slot-lost=recopy"} {
		if !strings.Contains(out, w) {
			t.Errorf("status output lacks %q:\n%s", w, out)
		}
	}
	out, err = runOnce(t, args...)
	if err == nil {
		t.Fatalf("run on a lost slot exited 0; output:\n%s", tail(out, 20))
	}
	for _, w := range []string{slotLostSlot, "was invalidated by the server", "--on-slot-lost=recopy", "max_slot_wal_keep_size"} {
		if !strings.Contains(out, w) {
			t.Errorf("run on a lost slot: output lacks %q:\n%s", w, tail(out, 20))
		}
	}

	b = startBridge(t, nil, append(args, "--on-slot-lost=recopy")...)
	waitSlot(t, conn, slotLostSlot, b)
	exec1(t, conn, `UPDATE a SET v = 'after the recopy' WHERE id <= 3`)
	waitCaughtUp(t, conn, slotLostSlot, b)
	for _, w := range []string{"slot invalidated by the server: dropping it and copying every table again", "slot created"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("log lacks %q:\n%s", w, tail(b.log(), 30))
		}
	}
	b.stop(t)
	var status *string
	if err := conn.QueryRow(context.Background(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, slotLostSlot).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status == nil || *status == "lost" {
		t.Errorf("slot wal_status after the recopy = %v, want a live slot", status)
	}
	compareRows(t, "iceberg-go", "a", "id", icegoRows(t, tg, "public.a"), pgRows(t, conn, "id::text AS id, v", "a"))
}

// A quiet publication on a busy server: the bridge's slot keeps advancing
// past WAL written only to an unpublished table, so it retains none of it.
func TestQuietPublicationSlotAdvances(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, slotLostSchema)
	b := startBridge(t, nil, runArgs(pg, "sl_pub", localTarget(t))...)
	waitSlot(t, conn, slotLostSlot, b)
	waitCaughtUp(t, conn, slotLostSlot, b)
	before := lsnOf(t, conn, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slotLostSlot)
	for i := 0; i < 3; i++ {
		exec1(t, conn, `INSERT INTO filler (pad) SELECT repeat('x', 1000) FROM generate_series(1, 4000)`)
	}
	// waitCaughtUp: confirmed_flush_lsn reaches the WAL insert position,
	// which the unpublished writes moved on by several megabytes.
	waitCaughtUp(t, conn, slotLostSlot, b)
	after := lsnOf(t, conn, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slotLostSlot)
	if after-before < 4<<20 {
		t.Errorf("confirmed_flush_lsn moved %d bytes (%s to %s), want past the ~12 MB written to the unpublished table", after-before, before, after)
	}
	b.stop(t)
}

// The slot is invalidated while the bridge streams from it: an open
// transaction (on another table, so it locks no row the test changes)
// holds the slot's restart_lsn back, WAL past
// max_slot_wal_keep_size is written, and the checkpoint terminates the
// walsender and marks the slot lost. With --on-slot-lost=recopy the same
// process sees START_REPLICATION refused, drops the slot, creates it again
// and copies the table again; the mirror ends equal to Postgres.
func TestSlotLostWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, conn := startSourceWith(t, map[string]string{"max_slot_wal_keep_size": "1MB"}, slotLostSchema)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "sl_pub", tg, "--on-slot-lost=recopy")...)
	waitSlot(t, conn, slotLostSlot, b)
	exec1(t, conn, `UPDATE a SET v = 'streamed' WHERE id <= 10`)
	waitCaughtUp(t, conn, slotLostSlot, b)
	pid := b.cmd.Process.Pid

	holder := pgConn(t, pg)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO filler (pad) VALUES ('held open')`); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `DELETE FROM a WHERE id % 7 = 0`)
	invalidateSlot(t, conn, slotLostSlot)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := &reconnectRun{conn: conn, b: b}
	r.waitLog(t, "slot invalidated by the server: dropping it and copying every table again")
	waitSlot(t, conn, slotLostSlot, b)
	exec1(t, conn, `UPDATE a SET v = 'after the recopy' WHERE id <= 3`)
	waitCaughtUp(t, conn, slotLostSlot, b)
	if !b.running() || b.cmd.Process.Pid != pid {
		t.Fatalf("bridge running=%v pid %d, want pid %d still running (a re-copy in the process)", b.running(), b.cmd.Process.Pid, pid)
	}
	b.stop(t)
	compareRows(t, "iceberg-go", "a", "id", icegoRows(t, tg, "public.a"), pgRows(t, conn, "id::text AS id, v", "a"))
}
