package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration whose rules name a column, a table or a type that the
// publication does not have is refused at start, every problem at once
// and each at its line, before a slot or an Iceberg table exists: a
// misspelt exclude must not ship the column it meant to keep out.
func TestConfigTyposRefused(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE SCHEMA app;
		CREATE TABLE app.users (id int PRIMARY KEY, email text, ssn text, balance numeric);
		INSERT INTO app.users VALUES (1, 'a@example.com', '078-05-1120', 10);
		CREATE PUBLICATION app_pub FOR TABLE app.users;`)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(`rules:
  - column: app.users.snn
    to: exclude
  - column: app.orders.total
    to: string
  - type: numerik
    to: decimal(38,9)
  - column: app.users.later
    to: exclude
    added_later: true
tables:
  - table: app.userz
    type_change: new-column
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := localTarget(t)
	out, err := runOnce(t, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "app_pub", "--config", cfg}, tg.args()...)...)
	if err == nil {
		t.Fatalf("run accepted the configuration; output:\n%s", out)
	}
	t.Logf("refused:\n%s", out)
	for _, w := range []string{
		cfg + ":2: rule 1: column app.users.snn: app.users has no column snn (its columns: id, email, ssn, balance)",
		cfg + ":4: rule 2: column app.orders.total: table app.orders is not in publication app_pub (its tables: app.users)",
		cfg + ":6: rule 3: type numerik: no type of that name in the database",
		cfg + ":12: tables entry 1: table app.userz is not in publication app_pub (its tables: app.users)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "app.users.later") {
		t.Errorf("a rule marked added_later is reported:\n%s", out)
	}
	var slots int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots != 0 {
		t.Errorf("%d replication slots after a refused configuration, want 0", slots)
	}
	if _, err := os.Stat(filepath.Join(tg.warehouse, "app.db")); !os.IsNotExist(err) {
		t.Errorf("the warehouse has Iceberg tables after a refused configuration (stat: %v)", err)
	}
}

// A bridge configured by its file alone: source, publication, warehouse,
// catalog and flush interval are settings of the file, a flag on the
// command line wins over the file, and the file's rules apply.
func TestConfigFileSettings(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE SCHEMA app;
		CREATE TABLE app.users (id int PRIMARY KEY, email text, ssn text);
		INSERT INTO app.users SELECT g, 'u' || g || '@example.com', 'ssn' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION app_pub FOR TABLE app.users;`)
	tg := localTarget(t)
	cfg := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(cfg, []byte(`source: `+pg.SuperURL("postgres")+`
publication: app_pub
warehouse: `+tg.warehouse+`
catalog: `+tg.catalog+`
flush:
  interval: 1h
rules:
  - column: app.users.ssn
    to: exclude
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// --flush-interval 1s on the command line wins over the file's 1h:
	// the slot is acknowledged only after a commit.
	b := startBridge(t, nil, "run", "--config", cfg, "--flush-interval", "1s")
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	exec1(t, conn, `UPDATE app.users SET email = 'changed' WHERE id <= 10; DELETE FROM app.users WHERE id > 45`)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	b.stop(t)
	got := icegoRows(t, tg, "app.users")
	compareRows(t, "iceberg-go", "app.users", "id", got, pgRows(t, conn, "id::text AS id, email", "app.users"))
	if _, ok := got[0]["ssn"]; ok {
		t.Errorf("the file's rule excludes app.users.ssn, but the mirror has it")
	}
}
