package integration

import (
	"testing"
)

// A column added while the bridge is stopped is in the table the next
// start's preflight reads, not yet in the Iceberg schema; the first change
// after it comes in a streamed transaction. Applying it ahead used to
// write its rows to the old schema, dropping the new column's values in the
// mirror and the changelog for good (the relation message matched the
// preflight's table, so nothing evolved the schema first; found by the
// randomized crash driver, seed 90). The streamed transaction must wait
// for its commit, where the relation message evolves the schema.
func TestStreamedAfterAddColumnWhileStopped(t *testing.T) {
	t.Parallel()
	pg, conn := startSourceWith(t, streamEverything(), `CREATE TABLE sc (id int PRIMARY KEY, v text, n int);
		INSERT INTO sc SELECT g, 'v' || g, g FROM generate_series(1, 3000) g;
		CREATE PUBLICATION sc_pub FOR TABLE sc;`)
	tg := localTarget(t)
	run := runArgs(pg, "sc_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_sc_pub", b)
	w := &workload{t: t, conn: conn, changes: map[string]int64{}}
	w.exec("sc", `UPDATE sc SET v = 'u' WHERE id % 10 = 0`)
	waitCaughtUp(t, conn, "pg2iceberg_sc_pub", b)
	b.stop(t)

	exec1(t, conn, `ALTER TABLE sc ADD COLUMN c int`)
	// Streamed: 1,000 updates are far past logical_decoding_work_mem.
	w.exec("sc", `UPDATE sc SET c = n WHERE id % 3 = 0`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_sc_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_sc_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "sc", "id", icegoRows(t, tg, "public.sc"), pgRows(t, conn, "id::text AS id, v, n::text AS n, c::text AS c", "sc"))
	checkChangelogExact(t, tg, "public.sc", w.changes["sc"])
	withC := 0
	for _, r := range icegoRows(t, tg, "public.sc__changelog") {
		if after, _ := r["after"].(map[string]any); after != nil && after["c"] != nil {
			withC++
		}
	}
	if withC != 1000 {
		t.Errorf("%d changelog rows carry the new column's value, want 1000", withC)
	}
}
