package integration

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// histStep is the source as one step of TestHistoryCommands left it.
type histStep struct {
	lsn      pglogrepl.LSN
	at       time.Time
	snapshot int64
	rows     []row
}

// cliRows runs a history command with --format json and decodes its rows.
func cliRows(t *testing.T, tg target, args ...string) []row {
	t.Helper()
	out, err := runOnce(t, append(append(args, "--format", "json"), tg.args()...)...)
	if err != nil {
		t.Fatalf("pg2iceberg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("pg2iceberg %s: line %q: %v", strings.Join(args, " "), line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// cliRun runs a command against tg and requires it to succeed.
func cliRun(t *testing.T, tg target, args ...string) string {
	t.Helper()
	out, err := runOnce(t, append(args, tg.args()...)...)
	if err != nil {
		t.Fatalf("pg2iceberg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// cliFails requires a command to exit non-zero with want in its output.
func cliFails(t *testing.T, tg target, want string, args ...string) {
	t.Helper()
	out, err := runOnce(t, append(args, tg.args()...)...)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("pg2iceberg %s: exit %v, output %q; want a failure saying %q", strings.Join(args, " "), err, out, want)
	}
}

// Time travel by each selector returns exactly the source's rows at that
// point, diff returns exactly the changes between two points, tags and
// branches read back by pyiceberg and Spark, bad input fails clearly, and
// a rollback (refused while the bridge runs) ends, after the next start,
// with the mirror equal to PostgreSQL again while expiry keeps the tagged
// snapshots.
func TestHistoryCommands(t *testing.T) {
	t.Parallel()
	jar := sparkJar(t)
	pg, conn := startSource(t, `CREATE TABLE acct (id int PRIMARY KEY, owner text, balance int);
		INSERT INTO acct SELECT g, 'o' || g, g * 10 FROM generate_series(1, 6) g;
		CREATE PUBLICATION hist_pub FOR TABLE acct;`)
	tg := localTarget(t)
	const slot, mirror = "pg2iceberg_hist_pub", "public.acct"
	run := runArgs(pg, "hist_pub", tg)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	cols := "id::text AS id, owner, balance::text AS balance"
	// Each step is one transaction, committed by the bridge in a snapshot
	// of its own before the next.
	stepSQL := []string{
		"", // the copy
		`UPDATE acct SET balance = balance + 1 WHERE id <= 2; DELETE FROM acct WHERE id = 6`,
		`INSERT INTO acct VALUES (7, 'o7', 70), (8, 'o8', 80); UPDATE acct SET owner = 'x3' WHERE id = 3`,
		`DELETE FROM acct WHERE id IN (1, 7); UPDATE acct SET balance = 0 WHERE id = 8; INSERT INTO acct VALUES (6, 'back', 6)`,
	}
	var steps []histStep
	for i, sql := range stepSQL {
		if sql != "" {
			if err := pg.Exec(t.Context(), "BEGIN; "+sql+"; COMMIT"); err != nil {
				t.Fatal(err)
			}
			waitCaughtUp(t, conn, slot, b)
		}
		cur := loadTable(t, tg, mirror).CurrentSnapshot()
		if i > 0 && cur.SnapshotID == steps[i-1].snapshot {
			t.Fatalf("step %d made no snapshot", i)
		}
		steps = append(steps, histStep{lsn: walLSN(t, conn), at: time.Now(), snapshot: cur.SnapshotID, rows: pgRows(t, conn, cols, "acct")})
	}

	checkTimeTravel(t, tg, conn, mirror, steps)
	checkDiffAgainstSource(t, tg, mirror, steps)
	checkDiffAgainstChangelog(t, tg, mirror, steps[1].lsn, steps[3].lsn)

	// Tags and branches, read back by iceberg-go (read), pyiceberg and Spark.
	checkRefCommands(t, tg, mirror, steps)
	compareRows(t, "read --ref step1", mirror, "id", cliRows(t, tg, "read", "--table", mirror, "--ref", "step1"), steps[1].rows)
	compareRows(t, "pyiceberg at tag step2", mirror, "id", pyicebergRows(t, tg, mirror, "--snapshot-id", fmt.Sprint(steps[2].snapshot)), steps[2].rows)
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, jar)
	checkServedRefs(t, uri, token, map[string]int64{"main": steps[3].snapshot, "step1": steps[1].snapshot, "step2": steps[2].snapshot, "audit": steps[2].snapshot})
	if rows, ok := spark.dump(t, "SELECT * FROM pg.public.acct VERSION AS OF 'step1'"); ok {
		compareRows(t, "Spark SQL VERSION AS OF 'step1'", mirror, "id", rows, steps[1].rows)
	}
	if rows, ok := spark.dump(t, "SELECT * FROM pg.public.acct.branch_audit"); ok {
		compareRows(t, "Spark SQL branch_audit", mirror, "id", rows, steps[2].rows)
	}

	checkBadInput(t, tg, mirror, steps)

	// Rollback: refused while the bridge runs, then with it stopped the
	// table goes back to step 1 and the next start copies it again.
	source := []string{"--source", pg.SuperURL("postgres")}
	cliFails(t, tg, "give --source", "rollback", "--table", mirror, "--to", "step1")
	cliFails(t, tg, "the bridge is running", append([]string{"rollback", "--table", mirror, "--to", "step1"}, source...)...)
	cliFails(t, tg, "is a changelog", append([]string{"rollback", "--table", mirror + "__changelog", "--to", "1"}, source...)...)
	exec1(t, conn, `UPDATE acct SET balance = balance * 2 WHERE id > 3`) // after the last step, before the stop
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	cliRun(t, tg, append([]string{"rollback", "--table", mirror, "--to", "step1"}, source...)...)
	compareRows(t, "pyiceberg after rollback", mirror, "id", pyicebergRows(t, tg, mirror), steps[1].rows)
	if rows, ok := spark.dump(t, "SELECT * FROM pg.public.acct"); ok {
		compareRows(t, "Spark SQL after rollback", mirror, "id", rows, steps[1].rows)
	}
	// Expiry runs at the next start's first commit: only what refs keep,
	// and the newest snapshot, survive.
	tbl := loadTable(t, tg, mirror)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{tiering.PropMaxSnapshotAgeMs: "1", tiering.PropMinSnapshotsToKeep: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, `UPDATE acct SET owner = 'after' WHERE id = 2`) // while stopped
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, slot, b)
	waitCaughtUp(t, conn, slot, b)
	exec1(t, conn, `UPDATE acct SET owner = 'later' WHERE id = 4`)
	waitCaughtUp(t, conn, slot, b)
	now := pgRows(t, conn, cols, "acct")
	compareRows(t, "pyiceberg after rollback and restart", mirror, "id", pyicebergRows(t, tg, mirror), now)
	compareRows(t, "read after rollback and restart", mirror, "id", cliRows(t, tg, "read", "--table", mirror), now)
	compareRows(t, "read --ref step2 after expiry", mirror, "id", cliRows(t, tg, "read", "--table", mirror, "--ref", "step2"), steps[2].rows)
	compareRows(t, "read --ref step1 after expiry", mirror, "id", cliRows(t, tg, "read", "--table", mirror, "--ref", "step1"), steps[1].rows)
	cliFails(t, tg, fmt.Sprintf("has no snapshot %d", steps[0].snapshot), "read", "--table", mirror, "--snapshot", fmt.Sprint(steps[0].snapshot))
	if resync := cliRows(t, tg, "read", "--table", mirror+"__changelog", "--where", "op = 'R'"); len(resync) != 1 {
		t.Errorf("changelog after the rollback's re-copy: %d resync rows, want 1: %v", len(resync), resync)
	}
	if rows, ok := spark.dump(t, "SELECT * FROM pg.public.acct VERSION AS OF 'step2'"); ok {
		compareRows(t, "Spark SQL VERSION AS OF 'step2' after expiry", mirror, "id", rows, steps[2].rows)
	}
	b.stop(t)
}

// sameRow compares two rows by their values' text.
func sameRow(a, b row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if fmt.Sprint(a[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// checkSnapshotsJSON requires snapshots --json to list each step's
// snapshot with a watermark between the previous step's LSN and its own.
func checkSnapshotsJSON(t *testing.T, tg target, mirror string, steps []histStep) {
	t.Helper()
	out := cliRun(t, tg, "snapshots", "--table", mirror, "--json")
	type snap struct {
		ID      int64    `json:"snapshot_id"`
		Parent  int64    `json:"parent_id"`
		Op      string   `json:"operation"`
		LSN     string   `json:"lsn"`
		CopyLSN string   `json:"copy_lsn"`
		Refs    []string `json:"refs"`
	}
	byID := map[int64]snap{}
	var replaces []snap
	all := map[int64]snap{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s snap
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("snapshots --json line %q: %v", line, err)
		}
		all[s.ID] = s
		if s.Op == "replace" {
			// The bridge's compaction of the mirror (a small table with
			// deletes is due soon): the same rows, the same watermark.
			replaces = append(replaces, s)
			continue
		}
		byID[s.ID] = s
	}
	if len(byID) != len(steps) {
		t.Errorf("snapshots --json lists %d snapshots besides compactions, want %d (one per step):\n%s", len(byID), len(steps), out)
	}
	for _, r := range replaces {
		if p, ok := byID[r.Parent]; ok && p.LSN != r.LSN {
			t.Errorf("snapshots --json: compaction %d has watermark %s, its parent %d %s: a rewrite moves no watermark", r.ID, r.LSN, p.ID, p.LSN)
		}
	}
	for i, st := range steps[1:] {
		s, ok := all[st.snapshot] // a step may end in a compaction
		lsn, err := pglogrepl.ParseLSN(s.LSN)
		if !ok || err != nil || lsn > st.lsn || lsn <= steps[i].lsn {
			t.Errorf("snapshots --json: step %d's snapshot %d has watermark %q, want one in (%s, %s]", i+1, st.snapshot, s.LSN, steps[i].lsn, st.lsn)
		}
	}
	if s := byID[steps[0].snapshot]; s.CopyLSN == "" {
		t.Errorf("snapshots --json: the copy's snapshot %d has no copy_lsn", steps[0].snapshot)
	}
}

// checkServedRefs requires pg2iceberg serve to list the refs want in
// public.acct's metadata, to iceberg-go's REST client and to a plain
// loadTable, and with snapshots=refs to return only their snapshots.
func checkServedRefs(t *testing.T, uri, token string, want map[string]int64) {
	t.Helper()
	tbl, err := icegoREST(t, uri, token).LoadTable(t.Context(), table.Identifier{"public", "acct"})
	if err != nil {
		t.Fatalf("iceberg-go REST client: load public.acct: %v", err)
	}
	got := map[string]int64{}
	for name, ref := range tbl.Metadata().Refs() {
		got[name] = ref.SnapshotID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("served refs of public.acct (iceberg-go REST client) = %v, want %v", got, want)
	}
	all := len(tbl.Metadata().Snapshots())
	code, body := httpGet(t, uri+"/v1/pg2iceberg/namespaces/public/tables/acct?snapshots=refs", token)
	var resp struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &resp) != nil {
		t.Fatalf("loadTable snapshots=refs = %d %.300s", code, body)
	}
	meta, err := table.ParseMetadataBytes(resp.Metadata)
	if err != nil {
		t.Fatalf("loadTable snapshots=refs: %v", err)
	}
	ids := map[int64]bool{}
	for _, s := range meta.Snapshots() {
		ids[s.SnapshotID] = true
	}
	wantIDs := map[int64]bool{}
	for _, id := range want {
		wantIDs[id] = true
	}
	if fmt.Sprint(ids) != fmt.Sprint(wantIDs) || all <= len(ids) {
		t.Errorf("loadTable snapshots=refs: snapshots %v of %d, want only those refs point at: %v", ids, all, wantIDs)
	}
}

// checkDiffAgainstChangelog requires diff between two LSNs to be the net
// effect, per key, of the changelog's rows committed between them (read
// with read --where on the changelog's lsn).
func checkDiffAgainstChangelog(t *testing.T, tg target, mirror string, from, to pglogrepl.LSN) {
	t.Helper()
	rows := cliRows(t, tg, "read", "--table", mirror+"__changelog", "--where", fmt.Sprintf("lsn > %d and lsn <= %d", uint64(from), uint64(to)))
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a["lsn"].(float64) != b["lsn"].(float64) {
			return a["lsn"].(float64) < b["lsn"].(float64)
		}
		return a["seq"].(float64) < b["seq"].(float64)
	})
	type net struct {
		before, after bool
		last          map[string]any
	}
	byKey := map[string]*net{}
	for _, r := range rows {
		img, _ := r["after"].(map[string]any)
		if img == nil {
			img, _ = r["before"].(map[string]any)
		}
		if img == nil {
			t.Fatalf("changelog row %v has no image", r)
		}
		k := fmt.Sprint(img["id"])
		n, seen := byKey[k]
		if !seen {
			n = &net{before: r["op"] != "I"}
			byKey[k] = n
		}
		n.after = r["op"] != "D"
		n.last, _ = r["after"].(map[string]any)
	}
	if len(rows) != 7 || len(byKey) != 5 {
		t.Errorf("changelog between %s and %s: %d rows on %d keys, want 7 on 5", from, to, len(rows), len(byKey))
	}
	want := map[string]string{}
	for k, n := range byKey {
		switch {
		case !n.before && n.after:
			want[k] = "inserted"
		case n.before && !n.after:
			want[k] = "deleted"
		case n.before && n.after:
			want[k] = "updated"
		}
	}
	got := map[string]string{}
	for _, c := range diffChanges(t, tg, "--table", mirror, "--from", "lsn:"+from.String(), "--to", "lsn:"+to.String()) {
		img := c.After
		if img == nil {
			img = c.Before
		}
		k := fmt.Sprint(img["id"])
		got[k] = c.Change
		if n := byKey[k]; c.After != nil && (n == nil || fmt.Sprint(n.last) != fmt.Sprint(map[string]any(c.After))) {
			t.Errorf("diff: key %s after %v, but the changelog's last image is %v", k, c.After, n)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff from %s to %s = %v, but the changelog's net changes are %v", from, to, got, want)
	}
}

// checkTimeTravel requires read by every selector to return each step's
// rows, and --where, --columns and --limit to select as PostgreSQL does.
func checkTimeTravel(t *testing.T, tg target, conn *pgx.Conn, mirror string, steps []histStep) {
	t.Helper()
	for i, s := range steps {
		for _, sel := range [][]string{
			{"--snapshot", fmt.Sprint(s.snapshot)},
			{"--time", s.at.UTC().Format(time.RFC3339Nano)},
			{"--lsn", s.lsn.String()},
		} {
			got := cliRows(t, tg, append([]string{"read", "--table", mirror}, sel...)...)
			compareRows(t, "read "+strings.Join(sel, " "), fmt.Sprintf("%s at step %d", mirror, i), "id", got, s.rows)
		}
	}
	got := cliRows(t, tg, "read", "--table", mirror, "--lsn", steps[2].lsn.String(), "--where", "balance >= 30 and owner != 'o4' or id in (1)", "--columns", "owner,id", "--limit", "10")
	want := pgRows(t, conn, "id::text AS id, owner", "(VALUES (1, 'o1'), (3, 'x3'), (5, 'o5'), (7, 'o7'), (8, 'o8')) v(id, owner)")
	compareRows(t, "read --where", mirror, "id", got, want)
	if len(got) > 0 && len(got[0]) != 2 {
		t.Errorf("read --columns owner,id: row %v, want those two columns only", got[0])
	}
}

// histChange is one line of diff --format json.
type histChange struct {
	Change        string
	Before, After row
}

// diffChanges runs diff --format json and decodes its lines.
func diffChanges(t *testing.T, tg target, args ...string) []histChange {
	t.Helper()
	out := cliRun(t, tg, append(append([]string{"diff"}, args...), "--format", "json")...)
	var changes []histChange
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var c histChange
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("diff output %q: %v", line, err)
		}
		changes = append(changes, c)
	}
	return changes
}

// checkDiffAgainstSource requires diff from step 1 to step 3 to be the
// difference of the source's copies at those steps.
func checkDiffAgainstSource(t *testing.T, tg target, mirror string, steps []histStep) {
	t.Helper()
	// diff from step 1 to step 3, by LSN and by snapshot, against the
	// source's copies: 1 deleted, 3 updated, 6 inserted again (deleted at
	// step 1), 8 inserted (and updated since), 7 absent (inserted and
	// deleted in between).
	for _, from := range []string{"lsn:" + steps[1].lsn.String(), fmt.Sprint(steps[1].snapshot)} {
		changes := diffChanges(t, tg, "--table", mirror, "--from", from, "--to", "lsn:"+steps[3].lsn.String())
		before, after := rowsKey(steps[1].rows, "id"), rowsKey(steps[3].rows, "id")
		wantChanges := map[string]string{}
		for k, r := range after {
			if o, ok := before[k]; !ok {
				wantChanges[k] = "inserted"
			} else if fmt.Sprint(o) != fmt.Sprint(r) {
				wantChanges[k] = "updated"
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				wantChanges[k] = "deleted"
			}
		}
		gotChanges := map[string]string{}
		for _, c := range changes {
			r := c.After
			if c.Change == "deleted" {
				r = c.Before
			}
			k := fmt.Sprint(r["id"])
			gotChanges[k] = c.Change
			if w := after[k]; c.Change != "deleted" && !sameRow(r, w) {
				t.Errorf("diff --from %s: %s row %v, want %v", from, c.Change, r, w)
			}
			if w := before[k]; c.Change != "inserted" && !sameRow(c.Before, w) {
				t.Errorf("diff --from %s: %s old row %v, want %v", from, c.Change, c.Before, w)
			}
		}
		if fmt.Sprint(gotChanges) != fmt.Sprint(wantChanges) || len(wantChanges) != 4 {
			t.Errorf("diff --from %s = %v, want %v (4 keys)", from, gotChanges, wantChanges)
		}
	}
}

// checkRefCommands creates, lists and drops tags and branches (step1 and
// step2 tags, an audit branch at step2), bad cases included.
func checkRefCommands(t *testing.T, tg target, mirror string, steps []histStep) {
	t.Helper()
	cliRun(t, tg, "tag", "create", "--table", mirror, "--name", "step1", "--at", "lsn:"+steps[1].lsn.String())
	cliRun(t, tg, "tag", "create", "--table", mirror, "--name", "step2", "--at", fmt.Sprint(steps[2].snapshot))
	cliRun(t, tg, "branch", "create", "--table", mirror, "--name", "audit", "--at", "ref:step2")
	cliRun(t, tg, "branch", "create", "--table", mirror, "--name", "scratch")
	cliFails(t, tg, `already has a tag "step1"`, "tag", "create", "--table", mirror, "--name", "step1")
	cliFails(t, tg, `"audit" of table public.acct is a branch, not a tag`, "tag", "drop", "--table", mirror, "--name", "audit")
	cliRun(t, tg, "branch", "drop", "--table", mirror, "--name", "scratch")
	if out := cliRun(t, tg, "branch", "list", "--table", mirror); !strings.Contains(out, "audit") || strings.Contains(out, "scratch") {
		t.Errorf("branch list after dropping scratch:\n%s", out)
	}
	if out := cliRun(t, tg, "snapshots", "--table", mirror); !strings.Contains(out, "audit,step2") {
		t.Errorf("snapshots does not show the refs audit,step2:\n%s", out)
	}
	checkSnapshotsJSON(t, tg, mirror, steps)
}

// checkBadInput requires clear errors and non-zero exits for unknown
// tables, snapshots and refs, bad --where and points out of history.
func checkBadInput(t *testing.T, tg target, mirror string, steps []histStep) {
	t.Helper()
	cliFails(t, tg, "no table public.nope in the catalog (tables in namespace public: public.acct", "read", "--table", "public.nope")
	cliFails(t, tg, "has no snapshot 42", "read", "--table", mirror, "--snapshot", "42")
	cliFails(t, tg, `has no ref "nope" (its refs: audit, main, step1, step2)`, "read", "--table", mirror, "--ref", "nope")
	cliFails(t, tg, "no column nope (the columns: id, owner, balance)", "read", "--table", mirror, "--where", "nope = 1")
	cliFails(t, tg, "expected a literal", "read", "--table", mirror, "--where", "id = ")
	cliFails(t, tg, "has no snapshot with a watermark at or below 0/1", "read", "--table", mirror, "--lsn", "0/1")
	cliFails(t, tg, "is not an ancestor of --to", "diff", "--table", mirror, "--from", fmt.Sprint(steps[3].snapshot), "--to", fmt.Sprint(steps[1].snapshot))
}
