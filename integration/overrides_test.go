package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Rules in --config change the Iceberg type of what they match, exclude
// columns, map an otherwise unsupported type to string, read a timestamp
// as wall-clock time in a zone, and round only with lossy: allow; they
// apply as well to columns added while streaming. A lossy rule without
// lossy: allow stops the bridge on a value that does not fit, naming
// table, column and key, with nothing committed.
func TestOverrides(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TYPE mood AS ENUM ('sad', 'ok');
		CREATE TABLE t (id int PRIMARY KEY, amount numeric, secret text, pt point, doc jsonb, at timestamp);
		INSERT INTO t VALUES (1, 1.005, 'hush', '(1,2)', '{"a": 1}', '2018-11-04 01:30:00'), (2, 7, 'hush', NULL, NULL, '2018-03-11 02:30:00');
		CREATE PUBLICATION t_pub FOR TABLE t;
		CREATE TABLE strict (id int PRIMARY KEY, amount numeric);
		INSERT INTO strict VALUES (1, 1.5), (2, 2.125);
		CREATE PUBLICATION strict_pub FOR TABLE strict;`)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(`rules:
  - type: numeric
    to: decimal(38,2)
    lossy: allow
  - column: public.t.secret
    to: exclude
  - column: public.t.pt
    to: string
  - column: public.t.at
    to: timestamptz
    zone: America/New_York
  - column: public.t.at2
    to: timestamptz
    zone: Asia/Kolkata
    added_later: true
  - column: public.t.hidden
    to: exclude
    added_later: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "t_pub", tg, "--config", cfg)...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	exec1(t, conn, `UPDATE t SET amount = 2.499, pt = '(3,4)' WHERE id = 2`)
	// Columns added while streaming: a type rule, a column rule with a
	// zone, an excluded column, and a type that is not built in.
	exec1(t, conn, `ALTER TABLE t ADD COLUMN extra numeric, ADD COLUMN at2 timestamp, ADD COLUMN hidden text, ADD COLUMN m mood`)
	exec1(t, conn, `UPDATE t SET extra = 3.14159, at2 = '2024-07-01 12:00:00', hidden = 'x', m = 'ok' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	var types []string
	for _, f := range pyicebergSchema(t, tg, "public.t") {
		types = append(types, f.Name+" "+f.Type)
	}
	if got, want := strings.Join(types, ", "), "id int, amount decimal(38, 2), pt string, doc string, at timestamptz, extra decimal(38, 2), at2 timestamptz, m string"; got != want {
		t.Errorf("schema with rules = %s, want %s", got, want)
	}
	// The zones' offsets as PostgreSQL applies them: 01:30 on 2018-11-04
	// happens twice in New York (the later, EST, counts); 02:30 on
	// 2018-03-11 never happens (the offset before the jump, EST, counts).
	want := []row{
		{"id": "1", "amount": "1.01", "pt": "(1,2)", "doc": `{"a": 1}`, "at": "2018-11-04 06:30:00.000000+00", "extra": "3.14", "at2": "2024-07-01 06:30:00.000000+00", "m": "ok"},
		{"id": "2", "amount": "2.50", "pt": "(3,4)", "doc": nil, "at": "2018-03-11 07:30:00.000000+00", "extra": nil, "at2": nil, "m": nil},
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), want)
	var pgAt string
	if err := conn.QueryRow(context.Background(), `SELECT string_agg(to_char((at AT TIME ZONE 'America/New_York') AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00', ',' ORDER BY id) FROM t`).Scan(&pgAt); err != nil {
		t.Fatal(err)
	}
	if pgAt != want[0]["at"].(string)+","+want[1]["at"].(string) {
		t.Errorf("PostgreSQL reads the wall-clock times as %s; the test expects %v, %v", pgAt, want[0]["at"], want[1]["at"])
	}

	strict := filepath.Join(dir, "strict.yaml")
	if err := os.WriteFile(strict, []byte("rules:\n  - type: numeric\n    to: decimal(38,2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg2 := localTarget(t)
	b = startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "strict_pub", "--config", strict}, tg2.args()...)...)
	b.exited(t, time.Minute)
	for _, w := range []string{"public.strict", "column amount", "id=2", "2.125"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("lossy value error does not mention %q:\n%s", w, tail(b.log(), 5))
		}
	}
	if rows := icegoRowsIfAny(t, tg2, "public.strict"); rows != 0 {
		t.Errorf("%d rows committed after a lossy value, want none", rows)
	}
}

// icegoRowsIfAny counts a table's rows, 0 when it has no snapshot.
func icegoRowsIfAny(t *testing.T, tg target, name string) int {
	t.Helper()
	tbl := loadTable(t, tg, name)
	if tbl.CurrentSnapshot() == nil {
		return 0
	}
	return len(icegoScan(t, tbl))
}
