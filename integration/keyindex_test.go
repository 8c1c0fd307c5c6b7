package integration

import (
	"context"
	"strings"
	"testing"
	"time"
)

// waitLog waits until the bridge's log holds want.
func waitLog(t *testing.T, b *bridge, want string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if strings.Contains(b.log(), want) {
			return
		}
		if !b.running() {
			t.Fatalf("bridge exited (%v) before logging %s; log:\n%s", b.err, want, tail(b.log(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("bridge did not log %s within 3 minutes; log:\n%s", want, tail(b.log(), 40))
}

// kill stops the bridge with SIGKILL: nothing is flushed or saved.
func (b *bridge) kill() {
	_ = b.cmd.Process.Kill()
	<-b.done
}

// A key change commits a schema update and no snapshot, so the key index
// file a clean stop saved under the old key still names the current
// snapshot. Killed before the next data commit, the restart must not load
// that file: updates and deletes by the new key find their rows, and no key
// is live twice. With the DDL capture the key changes while streaming;
// without it, at the start that finds it.
func TestKeyChangeStaleIndex(t *testing.T) {
	t.Parallel()
	for _, capture := range []bool{true, false} {
		name := "at start"
		if capture {
			name = "captured"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pg, conn := startSource(t, `CREATE TABLE k (a int NOT NULL, b int NOT NULL, v text, PRIMARY KEY (a));
				INSERT INTO k SELECT g, g * 10, 'v' || g FROM generate_series(1, 100) g;
				CREATE PUBLICATION key_pub FOR TABLE k;`)
			if capture {
				if out, err := runOnce(t, "setup", "--source", pg.SuperURL("postgres")); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			tg := localTarget(t)
			run := runArgs(pg, "key_pub", tg)
			b := startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_key_pub", b)
			b.stop(t) // saves the index, keyed by a
			const rekey = `BEGIN; ALTER TABLE k DROP CONSTRAINT k_pkey; ALTER TABLE k ADD PRIMARY KEY (b); COMMIT;`
			if !capture {
				if err := pg.Exec(ctx, rekey); err != nil {
					t.Fatal(err)
				}
			}
			b = startBridge(t, nil, run...)
			if capture {
				waitSlot(t, conn, "pg2iceberg_key_pub", b)
				if err := pg.Exec(ctx, rekey); err != nil {
					t.Fatal(err)
				}
			}
			waitLog(t, b, `msg="key changed: key index rebuilt" table=public.k from=a to=b`)
			b.kill()

			b = startBridge(t, nil, run...)
			waitSlot(t, conn, "pg2iceberg_key_pub", b)
			if !strings.Contains(b.log(), `msg="key index rebuilt" table=public.k rows=100`) {
				t.Errorf("the restart did not rebuild the index:\n%s", tail(b.log(), 10))
			}
			// b = 20, 30, 500, 700 are also values of a, of other rows;
			// b = 990 and 1000 are not.
			exec1(t, conn, `UPDATE k SET v = 'updated' WHERE b IN (20, 500, 1000)`)
			exec1(t, conn, `DELETE FROM k WHERE b IN (30, 700)`)
			exec1(t, conn, `UPDATE k SET b = b + 1 WHERE b = 990`)
			waitCaughtUp(t, conn, "pg2iceberg_key_pub", b)
			b.stop(t)
			want := pgRows(t, conn, "a::text AS a, b::text AS b, v", "k")
			compareRows(t, "pyiceberg", "k keyed by b", "b", pyicebergRows(t, tg, "public.k"), want)
			compareRows(t, "iceberg-go", "k keyed by b", "b", icegoRows(t, tg, "public.k"), want)
		})
	}
}
