package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// afterValues returns column col of changelog rows' after images as
// sorted text.
func afterValues(rows []row, col string) []string {
	var out []string
	for _, r := range rows {
		after, _ := r["after"].(map[string]any)
		out = append(out, fmt.Sprint(after[col]))
	}
	slices.Sort(out)
	return out
}

// fieldID returns the field ID of column name in Iceberg table table (0
// when it has none).
func fieldID(t *testing.T, tg target, table, name string) int {
	t.Helper()
	f, ok := loadTable(t, tg, table).Schema().FindFieldByName(name)
	if !ok {
		return 0
	}
	return f.ID
}

// A keyless table's column renamed without the DDL capture, while the
// bridge streams and while it is stopped: the error points to backfill
// --table, and that works for a table without a key too (it brings the
// changelog's schema in line, there are no rows to copy): the renamed
// column keeps its field and the changelog goes on.
func TestKeylessRenameWithoutCapture(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE notes (id int, body text);
		CREATE PUBLICATION notes_pub FOR TABLE notes WITH (publish = 'insert, truncate');`)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "notes_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s"}, common...)
	backfill := append([]string{"backfill", "--table", "public.notes"}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_notes_pub", b)
	exec1(t, conn, `INSERT INTO notes VALUES (1, 'a')`)
	waitCaughtUp(t, conn, "pg2iceberg_notes_pub", b)
	field := fieldID(t, tg, "public.notes__changelog", "after.body")
	if field == 0 {
		t.Fatal("the changelog has no field after.body")
	}

	// stopped says whether the bridge is stopped before the rename (or
	// streams through it); the rename and the next insert stop it, until
	// backfill --table; then the changelog has all rows under the new name.
	step := func(what string, stopped bool, rename, inserted, later, col string, want []string) {
		t.Helper()
		exec1(t, conn, rename)
		exec1(t, conn, inserted)
		if stopped {
			b = startBridge(t, nil, run...)
		}
		b.exited(t, time.Minute)
		if !strings.Contains(b.log(), "pg2iceberg backfill --table public.notes") {
			t.Fatalf("%s: the error does not point to backfill --table:\n%s", what, tail(b.log(), 10))
		}
		if out, err := runOnce(t, backfill...); err != nil {
			t.Fatalf("%s: backfill --table of the keyless table: %v\n%s", what, err, out)
		}
		b = startBridge(t, nil, run...)
		waitSlot(t, conn, "pg2iceberg_notes_pub", b)
		exec1(t, conn, later)
		waitCaughtUp(t, conn, "pg2iceberg_notes_pub", b)
		b.stop(t)
		if got := afterValues(icegoRows(t, tg, "public.notes__changelog"), col); !slices.Equal(got, want) {
			t.Errorf("%s: changelog %s = %v, want %v", what, col, got, want)
		}
		if id := fieldID(t, tg, "public.notes__changelog", "after."+col); id != field {
			t.Errorf("%s: %s has field ID %d, body had %d: the rename did not keep the field", what, col, id, field)
		}
	}
	step("rename while streaming", false, `ALTER TABLE notes RENAME COLUMN body TO content`,
		`INSERT INTO notes VALUES (2, 'b')`, `INSERT INTO notes VALUES (3, 'c')`, "content", []string{"a", "b", "c"})
	step("rename while stopped", true, `ALTER TABLE notes RENAME COLUMN content TO note`,
		`INSERT INTO notes VALUES (4, 'd')`, `INSERT INTO notes VALUES (5, 'e')`, "note", []string{"a", "b", "c", "d", "e"})
}

// A key column renamed without the DDL capture, while the bridge streams
// and while it is stopped: the error gives a way out that keeps history
// (backfill --table, which renames the Iceberg field by attnum), not
// "drop the Iceberg tables", and after it the mirror is exact.
func TestKeyRenameWithoutCapture(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE k (id int PRIMARY KEY, v text);
		INSERT INTO k SELECT g, 'v' || g FROM generate_series(1, 20) g;
		CREATE PUBLICATION k_pub FOR TABLE k;`)
	tg := localTarget(t)
	common := append([]string{"--source", pg.SuperURL("postgres"), "--publication", "k_pub"}, tg.args()...)
	run := append([]string{"run", "--flush-interval", "1s"}, common...)
	backfill := append([]string{"backfill", "--table", "public.k"}, common...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_k_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_k_pub", b)
	field := fieldID(t, tg, "public.k", "id")
	if field == 0 {
		t.Fatal("the mirror has no field id")
	}
	wayOut := func(what string, b *bridge) {
		t.Helper()
		b.exited(t, time.Minute)
		log := tail(b.log(), 10)
		t.Logf("%s:\n%s", what, log)
		if !strings.Contains(log, "pg2iceberg backfill --table public.k") || strings.Contains(log, "drop the Iceberg tables") {
			t.Fatalf("%s: the error does not give backfill --table as the way out:\n%s", what, log)
		}
		if out, err := runOnce(t, backfill...); err != nil {
			t.Fatalf("backfill --table: %v\n%s", err, out)
		}
	}

	// While streaming.
	exec1(t, conn, `ALTER TABLE k RENAME COLUMN id TO kid`)
	exec1(t, conn, `UPDATE k SET v = 'u' WHERE kid <= 5`)
	wayOut("key rename while streaming", b)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_k_pub", b)
	exec1(t, conn, `DELETE FROM k WHERE kid = 6`)
	waitCaughtUp(t, conn, "pg2iceberg_k_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "k after the key rename while streaming", "kid", icegoRows(t, tg, "public.k"), pgRows(t, conn, "kid::text AS kid, v", "k"))
	if id := fieldID(t, tg, "public.k", "kid"); id != field {
		t.Errorf("kid has field ID %d, id had %d: the rename did not keep the field", id, field)
	}

	// While stopped.
	exec1(t, conn, `ALTER TABLE k RENAME COLUMN kid TO key`)
	exec1(t, conn, `UPDATE k SET v = 'w' WHERE key > 15`)
	wayOut("key rename while stopped", startBridge(t, nil, run...))
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_k_pub", b)
	exec1(t, conn, `DELETE FROM k WHERE key = 7`)
	waitCaughtUp(t, conn, "pg2iceberg_k_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "k after the key rename while stopped", "key", icegoRows(t, tg, "public.k"), pgRows(t, conn, "key::text AS key, v", "k"))
	if id := fieldID(t, tg, "public.k", "key"); id != field {
		t.Errorf("key has field ID %d, id had %d: the rename did not keep the field", id, field)
	}
}
