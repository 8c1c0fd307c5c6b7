package integration

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A table that joins a FOR TABLES IN SCHEMA publication without a GRANT to
// the bridge's role stops the bridge with the GRANT that fixes it and the
// ALTER DEFAULT PRIVILEGES that keeps it from happening again; after the
// GRANT the next start copies the table.
func TestNewTableWithoutGrant(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE ROLE app LOGIN;
		CREATE ROLE bridge LOGIN REPLICATION PASSWORD 'bridge-pw';
		CREATE SCHEMA app AUTHORIZATION app;
		SET ROLE app;
		CREATE TABLE app.first (id int PRIMARY KEY);
		INSERT INTO app.first VALUES (1);
		GRANT USAGE ON SCHEMA app TO bridge;
		GRANT SELECT ON app.first TO bridge;
		RESET ROLE;
		CREATE PUBLICATION app_pub FOR TABLES IN SCHEMA app;`)
	tg := localTarget(t)
	run := append([]string{"run", "--source", pg.URL("bridge", "bridge-pw", "postgres"), "--publication", "app_pub", "--flush-interval", "1s"}, tg.args()...)
	b := startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	exec1(t, conn, `SET ROLE app`)
	exec1(t, conn, `CREATE TABLE app.later (id int PRIMARY KEY, v text)`)
	exec1(t, conn, `INSERT INTO app.later VALUES (1, 'a'), (2, 'b')`)
	exec1(t, conn, `RESET ROLE`)
	b.exited(t, time.Minute)
	msg := tail(b.log(), 6)
	t.Logf("stopped with:\n%s", msg)
	for _, w := range []string{
		"role bridge cannot read app.later",
		`GRANT SELECT ON "app"."later" TO "bridge";`,
		`ALTER DEFAULT PRIVILEGES FOR ROLE "app" IN SCHEMA "app" GRANT SELECT ON TABLES TO "bridge";`,
		"then start the bridge again",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("the error lacks %q", w)
		}
	}
	exec1(t, conn, `GRANT SELECT ON app.later TO bridge`)
	b = startBridge(t, nil, run...)
	waitSlot(t, conn, "pg2iceberg_app_pub", b)
	waitCaughtUp(t, conn, "pg2iceberg_app_pub", b)
	b.stop(t)
	compareRows(t, "iceberg-go", "app.later", "id", icegoRows(t, tg, "app.later"), pgRows(t, conn, "id::text AS id, v", "app.later"))
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM app.later`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("app.later has %d rows (%v), want 2", n, err)
	}
}
