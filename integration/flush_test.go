package integration

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"
)

// A batch is flushed at the first transaction boundary after --flush-rows
// changes, long before --flush-interval; what is left waits for the
// interval or the stop. The settings come from the environment
// (PG2ICEBERG_FLUSH_ROWS, PG2ICEBERG_FLUSH_INTERVAL), so the variable forms
// of the flags are exercised too.
func TestFlushRows(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE PUBLICATION fr_pub FOR TABLE t;`)
	tg := localTarget(t)
	const slot = "pg2iceberg_fr_pub"
	args := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "fr_pub"}, tg.args()...)
	b := startBridge(t, []string{"PG2ICEBERG_FLUSH_ROWS=100", "PG2ICEBERG_FLUSH_INTERVAL=1h"}, args...)
	waitSlot(t, conn, slot, b)
	var afterTx [251]pglogrepl.LSN
	for i := 1; i <= 250; i++ {
		exec1(t, conn, `INSERT INTO t VALUES ($1, 'v')`, i)
		afterTx[i] = lsnOf(t, conn, "SELECT pg_current_wal_insert_lsn()::text")
	}
	// Two flushes, after the 100th and the 200th transaction.
	deadline := time.Now().Add(time.Minute)
	for lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot) < afterTx[200] {
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("the slot did not reach the 200th transaction (%s) within a minute with --flush-rows 100; log:\n%s", afterTx[200], tail(b.log(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if confirmed := lsnOf(t, conn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot); confirmed >= afterTx[201] {
		t.Errorf("confirmed_flush_lsn %s is past the 201st transaction (%s): the last 50 changes were flushed before the interval", confirmed, afterTx[201])
	}
	if n := len(icegoRows(t, tg, "public.t")); n != 200 {
		t.Errorf("mirror holds %d rows after two --flush-rows flushes, want 200", n)
	}
	b.stop(t)
	if n := len(icegoRows(t, tg, "public.t")); n != 250 {
		t.Errorf("mirror holds %d rows after the stop, want 250", n)
	}
}

// --flush-bytes bounds a batch by its Parquet bytes: with a limit below one
// row's, every transaction is a flush of its own (one mirror snapshot each).
func TestFlushBytes(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE PUBLICATION fb_pub FOR TABLE t;`)
	tg := localTarget(t)
	const slot = "pg2iceberg_fb_pub"
	args := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "fb_pub",
		"--flush-interval", "1h", "--flush-bytes", "1", "--no-changelog"}, tg.args()...)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	for i := 1; i <= 5; i++ {
		exec1(t, conn, `INSERT INTO t VALUES ($1, repeat('x', 1000))`, i)
	}
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	tbl := icegoTable(t, tg, "public.t")
	added := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties["added-records"] == "1" {
			added++
		}
	}
	if added != 5 {
		t.Errorf("%d snapshots added one row each, want 5 (one flush per transaction with --flush-bytes 1)", added)
	}
	if names := tableNames(t, tg, "public"); len(names) != 1 || names[0] != "t" {
		t.Errorf("--no-changelog: namespace public holds %v, want only t", names)
	}
}

// tableNames lists the tables of a namespace in tg's catalog.
func tableNames(t *testing.T, tg target, ns string) []string {
	t.Helper()
	var names []string
	withCatalog(t, tg, func(ctx context.Context, cat catalog.Catalog) {
		for ident, err := range cat.ListTables(ctx, table.Identifier{ns}) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, ident[len(ident)-1])
		}
	})
	return names
}
