package integration

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// A SIGTERM while the bridge starts (its SQL session is open, every query
// slowed to 1 s by toxiproxy, so the lease or the preflight is under way)
// stops it as asked: exit 0 and "stopped during the start", not exit 1
// with the step's error ("preflight failed: read wal_level: conn closed",
// which the randomized crash driver met when it stopped a bridge it had
// just restarted). No slot is created, and the next start streams.
func TestStopDuringStart(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE ss (id int PRIMARY KEY, v text);
		INSERT INTO ss VALUES (1, 'a');
		CREATE PUBLICATION ss_pub FOR TABLE ss;`)
	px := pgProxy(t, pg)
	tg := localTarget(t)
	slow := toxic(t, px, harness.Toxic{Name: "slow", Type: "latency", Attributes: map[string]int{"latency": 1000}})
	args := append([]string{"run", "--source", proxiedURL(t, pg.SuperURL("postgres"), px.Listen), "--publication", "ss_pub"}, tg.args()...)
	b := startBridge(t, nil, args...)
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg2iceberg'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if !b.running() || time.Now().After(deadline) {
			t.Fatalf("the bridge opened no session within a minute (running: %v); log:\n%s", b.running(), tail(b.log(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.exited(t, time.Minute)
	if b.err != nil || !strings.Contains(b.log(), `msg="stopped during the start"`) {
		t.Fatalf("SIGTERM during the start: exit %v, want 0 and \"stopped during the start\"; log:\n%s", b.err, tail(b.log(), 20))
	}
	var slots int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots`).Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots != 0 {
		t.Errorf("%d replication slots after a stop during the start, want 0", slots)
	}
	slow()
	b = startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_ss_pub", b)
	b.stop(t)
}
