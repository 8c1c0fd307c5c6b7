package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Rules in --config change the Iceberg type of what they match, exclude
// columns, map an otherwise unsupported type to string, and round only
// with lossy: allow; a lossy rule without it stops the bridge on a value
// that does not fit, naming table, column and key, with nothing committed.
func TestOverrides(t *testing.T) {
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, amount numeric, secret text, pt point, doc jsonb);
		INSERT INTO t VALUES (1, 1.005, 'hush', '(1,2)', '{"a": 1}'), (2, 7, 'hush', NULL, NULL);
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
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	b := startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "t_pub", "--flush-interval", "1s", "--config", cfg}, tg.args()...)...)
	waitSlot(t, conn, "pg2iceberg_t_pub", b)
	exec1(t, conn, `UPDATE t SET amount = 2.499, pt = '(3,4)' WHERE id = 2`)
	waitCaughtUp(t, conn, "pg2iceberg_t_pub", b)
	b.stop(t)
	var types []string
	for _, f := range pyicebergSchema(t, tg, "public.t") {
		types = append(types, f.Name+" "+f.Type)
	}
	if got := strings.Join(types, ", "); got != "id int, amount decimal(38, 2), pt string, doc string" {
		t.Errorf("schema with rules = %s", got)
	}
	want := []row{{"id": "1", "amount": "1.01", "pt": "(1,2)", "doc": `{"a": 1}`}, {"id": "2", "amount": "2.50", "pt": "(3,4)", "doc": nil}}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), want)

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
