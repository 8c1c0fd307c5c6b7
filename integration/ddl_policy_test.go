package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A type change Iceberg cannot promote stops the bridge under the default
// policy, naming the table, the column and the option, with nothing
// written for it; restarted with type_change: new-column, the old field
// keeps its ID under a suffixed name, a new field takes the name, and the
// table is copied again so existing rows show their converted values. The
// changelog's structs follow, and it records the resync.
func TestTypeChangePolicy(t *testing.T) {
	pg, conn := startSource(t, `CREATE SCHEMA pol;
		CREATE TABLE pol.items (id int PRIMARY KEY, code text, qty int);
		INSERT INTO pol.items SELECT g, (g * 7)::text, g FROM generate_series(1, 200) g;
		CREATE PUBLICATION pol_pub FOR TABLE pol.items;`)
	tg := localTarget(t)
	run := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "pol_pub", "--flush-interval", "1s"}, tg.args()...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_pol_pub", b)
	exec1(t, conn, `UPDATE pol.items SET qty = qty + 1 WHERE id <= 10`)
	waitCaughtUp(t, conn, "pg2iceberg_pol_pub", b)
	ids := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, "pol.items") {
		ids[f.Name] = f.ID
	}

	exec1(t, conn, `ALTER TABLE pol.items ALTER COLUMN code TYPE int USING code::int`)
	exec1(t, conn, `UPDATE pol.items SET code = code + 1 WHERE id <= 5`)
	b.exited(t, time.Minute)
	for _, w := range []string{"pol.items", "column code", "type_change: new-column"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("incompatible type change error does not mention %q:\n%s", w, tail(b.log(), 5))
		}
	}
	if got := names(pyicebergSchema(t, tg, "pol.items")); got != "id,code,qty" {
		t.Errorf("after the rejected change: columns %s, want id,code,qty unchanged", got)
	}

	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte("tables:\n  - table: pol.items\n    type_change: new-column\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b = startBridge(t, nil, append(run, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_pol_pub", b)
	exec1(t, conn, `UPDATE pol.items SET qty = 0 WHERE id = 200`)
	waitCaughtUp(t, conn, "pg2iceberg_pol_pub", b)
	b.stop(t)
	if !strings.Contains(b.log(), "copying the table again") {
		t.Errorf("the retyped table was not copied again; log:\n%s", tail(b.log(), 10))
	}
	var got []string
	for _, f := range pyicebergSchema(t, tg, "pol.items") {
		got = append(got, f.Name+" "+f.Type)
		if f.Name == "code__v2" && f.ID != ids["code"] {
			t.Errorf("code__v2 has field id %d, want %d (the old code's)", f.ID, ids["code"])
		}
		if f.Name == "code" && f.ID == ids["code"] {
			t.Errorf("the new code field reuses the old field id %d", f.ID)
		}
	}
	if g := strings.Join(got, ", "); g != "id int, code__v2 string, qty int, code int" {
		t.Errorf("columns after new-column: %s, want id int, code__v2 string, qty int, code int", g)
	}
	rows := pyicebergRows(t, tg, "pol.items")
	for _, r := range rows {
		if r["code__v2"] != nil {
			t.Fatalf("row %v: code__v2 holds a value; the copy replaced every row, and Postgres has no old-typed value left", r)
		}
		delete(r, "code__v2")
	}
	compareRows(t, "pyiceberg", "pol.items", "id", rows, pgRows(t, conn, "id::text AS id, qty::text AS qty, code::text AS code", "pol.items"))
	var resyncs int
	for _, c := range pyicebergRows(t, tg, "pol.items__changelog") {
		if c["op"] == "R" {
			resyncs++
		}
		if a, ok := c["after"].(map[string]any); ok && c["op"] == "U" && a["id"] == "200" && (a["code"] != "1400" || a["code__v2"] != nil) {
			t.Errorf("changelog after image of id 200: %v, want code 1400 and no code__v2", a)
		}
	}
	if resyncs != 1 {
		t.Errorf("changelog has %d resync rows, want 1", resyncs)
	}
}
