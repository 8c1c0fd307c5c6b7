package integration

import (
	"strings"
	"testing"
)

// A server restart drops both of the bridge's connections: it reopens the
// replication connection and the SQL one, so a table sync after the
// restart (ADD COLUMN ... DEFAULT copies the table again) works, and the
// mirror equals Postgres.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g;
		CREATE PUBLICATION sr_pub FOR TABLE t;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "sr_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_sr_pub", b)
	exec1(t, conn, `UPDATE t SET v = 'before' WHERE id <= 5`)
	waitCaughtUp(t, conn, "pg2iceberg_sr_pub", b)

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = pgConn(t, pg)
	exec1(t, conn, `ALTER TABLE t ADD COLUMN d text NOT NULL DEFAULT 'dflt'`)
	exec1(t, conn, `UPDATE t SET v = 'after' WHERE id = 1`)
	waitCaughtUp(t, conn, "pg2iceberg_sr_pub", b)
	b.stop(t)
	for _, w := range []string{"replication connection lost; reconnecting", "SQL connection lost too; reopening it", "copying the table again"} {
		if !strings.Contains(b.log(), w) {
			t.Errorf("log lacks %q:\n%s", w, tail(b.log(), 15))
		}
	}
	compareRows(t, "pyiceberg", "t", "id", pyicebergRows(t, tg, "public.t"), pgRows(t, conn, "id::text AS id, v, d", "t"))
}
