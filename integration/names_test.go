package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Publications whose names need quoting (mixed case, a quote, a comma, a
// hyphen, 63 characters) stream: pgoutput gets the name exactly, and the
// derived slot name is a valid one of its own for each.
func TestPublicationNames(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `SELECT 1`)
	tg := localTarget(t)
	slots := map[string]string{}
	for i, pub := range []string{"MixedCase", "it's", "Shop-Pub", "a,b", strings.Repeat("p", 63)} {
		tbl := fmt.Sprintf("t%d", i)
		exec1(t, conn, fmt.Sprintf(`CREATE TABLE %s (id int PRIMARY KEY, v text);
			INSERT INTO %[1]s SELECT g, 'v' || g FROM generate_series(1, 100) g;
			CREATE PUBLICATION %s FOR TABLE %[1]s`, tbl, pgx.Identifier{pub}.Sanitize()))
		b := startBridge(t, nil, runArgs(pg, pub, tg)...)
		slot := activeSlot(t, conn, b)
		if !regexp.MustCompile(`^pg2iceberg_[a-z0-9_]{1,52}$`).MatchString(slot) {
			t.Errorf("publication %q: slot %q is not a valid derived name", pub, slot)
		}
		if other, ok := slots[slot]; ok {
			t.Errorf("publications %q and %q share slot %s", pub, other, slot)
		}
		slots[slot] = pub
		exec1(t, conn, fmt.Sprintf(`UPDATE %s SET v = 'u' WHERE id <= 10`, tbl))
		waitCaughtUp(t, conn, slot, b)
		b.stop(t)
		compareRows(t, "pyiceberg", tbl, "id", pyicebergRows(t, tg, "public."+tbl), pgRows(t, conn, "id::text AS id, v", tbl))
		exec1(t, conn, `SELECT pg_drop_replication_slot($1)`, slot)
	}
	t.Logf("derived slots: %v", slots)

	out, err := runOnce(t, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "it's", "--slot", "My-Slot"}, tg.args()...)...)
	if err == nil || !strings.Contains(out, `slot name "My-Slot"`) || !strings.Contains(out, "--slot") || strings.Contains(out, "level=") {
		t.Errorf("--slot My-Slot: err %v, want a refusal naming the slot before anything runs; output:\n%s", err, out)
	}
}

// activeSlot waits for the bridge to stream and returns its slot's name.
func activeSlot(t *testing.T, conn *pgx.Conn, b *bridge) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var names []string
		if err := conn.QueryRow(context.Background(), `SELECT COALESCE(array_agg(slot_name::text), '{}') FROM pg_replication_slots WHERE active AND NOT temporary`).Scan(&names); err != nil {
			t.Fatal(err)
		}
		if len(names) == 1 && strings.Contains(b.log(), "msg=streaming") {
			return names[0]
		}
		if !b.running() {
			t.Fatalf("bridge exited (%v); log:\n%s", b.err, tail(b.log(), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no slot streaming within 3 minutes; log:\n%s", tail(b.log(), 20))
	return ""
}

// Source tables t and t__changelog would share an Iceberg table (t's
// changelog): the start fails before any table is created, naming both.
// t__changelog joining the publication later cannot stop the stream (any
// table owner can do it in a FOR ALL TABLES publication): its changes are
// skipped with a warning naming both, and t streams on.
func TestChangelogNameCollision(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE TABLE t__changelog (id int PRIMARY KEY, w text);
		INSERT INTO t VALUES (1, 'a'); INSERT INTO t__changelog VALUES (1, 'b');
		CREATE PUBLICATION nc_pub FOR TABLE t, t__changelog;`)
	tg := localTarget(t)
	run := runArgs(pg, "nc_pub", tg)
	want := []string{"public.t__changelog", "changelog of public.t", "--no-changelog"}
	out, err := runOnce(t, run...)
	if err == nil {
		t.Fatalf("run succeeded; output:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("error does not mention %q:\n%s", w, out)
		}
	}
	t.Logf("refused:\n%s", tail(strings.TrimSpace(out), 2))
	if strings.Contains(out, "key index") {
		t.Errorf("tables were opened before the check:\n%s", out)
	}

	exec1(t, conn, `ALTER PUBLICATION nc_pub DROP TABLE t__changelog`)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_nc_pub", b)
	exec1(t, conn, `ALTER PUBLICATION nc_pub ADD TABLE t__changelog`)
	exec1(t, conn, `UPDATE t__changelog SET w = 'c'`)
	exec1(t, conn, `UPDATE t SET v = 'after it'`)
	waitCaughtUp(t, conn, "pg2iceberg_nc_pub", b)
	b.stop(t)
	warn := lastLine(b.log(), `msg="table cannot be mirrored: its changes are skipped until it is fixed" table=public.t__changelog`)
	for _, w := range want {
		if !strings.Contains(warn, w) {
			t.Errorf("the bridge's warning does not mention %q: %s\n%s", w, warn, tail(b.log(), 5))
		}
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v", "t"))
	for _, r := range pyicebergRows(t, tg, "public.t__changelog") {
		if _, ok := r["op"]; !ok {
			t.Errorf("t's changelog holds a row that is not a change: %v", r)
		}
	}
}
