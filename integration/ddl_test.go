package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

type field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
}

func pyicebergSchema(t *testing.T, tg target, table string) []field {
	t.Helper()
	cmd := exec.Command("python3", "readers/pyiceberg_dump.py", "--catalog-uri", "sqlite:///"+mustAbs(t, tg.catalog), "--catalog-name", "pg2iceberg",
		"--warehouse", "file://"+mustAbs(t, tg.warehouse), "--table", table, "--schema")
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg schema of %s: %v", table, err)
	}
	var fs []field
	if err := json.Unmarshal(out, &fs); err != nil {
		t.Fatalf("schema json %s: %v", out, err)
	}
	return fs
}

func names(fs []field) string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

// A scripted DDL sequence under a concurrent write load: after each step
// pyiceberg sees Postgres's columns and values in the mirror, the changelog
// structs follow, field IDs of surviving columns never change, and an
// incompatible change stops the bridge before anything wrong is written.
func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	pg, conn := startSource(t, `CREATE TABLE items (id int PRIMARY KEY, n int, v text, price numeric(8,2));
		INSERT INTO items SELECT g, g, 'v' || g, g * 1.5 FROM generate_series(1, 300) g;
		CREATE PUBLICATION ddl_pub FOR TABLE items;`)
	tg := localTarget(t)
	b := startBridge(t, nil, append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "ddl_pub", "--flush-interval", "1s"}, tg.args()...)...)
	waitSlot(t, conn, "pg2iceberg_ddl_pub", b)
	ids := map[string]int{}
	for _, f := range pyicebergSchema(t, tg, "public.items") {
		ids[f.Name] = f.ID
	}

	var loadMu sync.Mutex // held by the load for each update; check holds it to compare a still table
	stop := writeLoad(t, pg, 3*time.Millisecond, func(ctx context.Context, lc *pgx.Conn, i int) error {
		// updates of the columns that live through every step
		loadMu.Lock()
		defer loadMu.Unlock()
		_, err := lc.Exec(ctx, `UPDATE items SET v = 'load ' || $1 WHERE id = $1 % 300 + 1`, i)
		return err
	})

	sel := func(cols string) []row { return pgRows(t, conn, cols, "items") }
	check := func(step, cols, wantNames string) {
		t.Helper()
		loadMu.Lock()
		defer loadMu.Unlock()
		waitCaughtUp(t, conn, "pg2iceberg_ddl_pub", b)
		if got := names(pyicebergSchema(t, tg, "public.items")); got != wantNames {
			t.Fatalf("%s: mirror columns %s, want %s", step, got, wantNames)
		}
		compareRows(t, "pyiceberg after "+step, "items", "id", pyicebergRows(t, tg, "public.items"), sel(cols))
		for _, f := range pyicebergSchema(t, tg, "public.items") {
			if id, ok := ids[f.Name]; ok && id != f.ID {
				t.Errorf("%s: field id of %s changed from %d to %d", step, f.Name, id, f.ID)
			}
		}
	}
	tx := func(stmts ...string) {
		t.Helper()
		// The load waits: its row updates and this transaction's ALTER TABLE
		// would otherwise deadlock in PostgreSQL.
		loadMu.Lock()
		defer loadMu.Unlock()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Rows, ALTER, rows in one transaction: each row under the right schema.
	tx(`UPDATE items SET n = n + 1 WHERE id <= 10`,
		`ALTER TABLE items ADD COLUMN note text`,
		`UPDATE items SET note = 'noted ' || id WHERE id <= 20`)
	check("add column", `id::text AS id, n::text AS n, v, price::text AS price, note`, "id,n,v,price,note")

	exec1(t, conn, `ALTER TABLE items ALTER COLUMN n TYPE bigint`)
	exec1(t, conn, `UPDATE items SET n = n + 5000000000 WHERE id <= 5`)
	check("int to bigint", `id::text AS id, n::text AS n, v, price::text AS price, note`, "id,n,v,price,note")

	exec1(t, conn, `ALTER TABLE items ALTER COLUMN price TYPE numeric(12,2)`)
	exec1(t, conn, `UPDATE items SET price = 1234567890.12 WHERE id = 7`)
	check("widen decimal", `id::text AS id, n::text AS n, v, price::text AS price, note`, "id,n,v,price,note")

	exec1(t, conn, `ALTER TABLE items DROP COLUMN note`)
	exec1(t, conn, `UPDATE items SET v = 'after drop' WHERE id = 3`)
	check("drop column", `id::text AS id, n::text AS n, v, price::text AS price`, "id,n,v,price")

	exec1(t, conn, `ALTER TABLE items ADD COLUMN note text`)
	exec1(t, conn, `UPDATE items SET note = 'again' WHERE id <= 3`)
	check("add back an old name", `id::text AS id, n::text AS n, v, price::text AS price, note`, "id,n,v,price,note")
	for _, f := range pyicebergSchema(t, tg, "public.items") {
		if f.Name == "note" && f.ID <= ids["price"] {
			t.Errorf("re-added column note reuses an old field id %d", f.ID)
		}
	}
	// Existing rows get the default's value, which no change event carries.
	exec1(t, conn, `ALTER TABLE items ADD COLUMN flag text NOT NULL DEFAULT 'dflt'`)
	exec1(t, conn, `UPDATE items SET flag = 'set' WHERE id = 2`)
	check("add column with default", `id::text AS id, n::text AS n, v, price::text AS price, note, flag`, "id,n,v,price,note,flag")
	cl := names(pyicebergSchema(t, tg, "public.items__changelog"))
	if cl != "op,lsn,xid,commit_ts,seq,before,after" {
		t.Errorf("changelog columns %s", cl)
	}
	stop()

	// An incompatible change stops the bridge before anything is written.
	exec1(t, conn, `ALTER TABLE items ALTER COLUMN v TYPE int USING length(v)`)
	exec1(t, conn, `UPDATE items SET v = 1 WHERE id = 1`)
	b.exited(t, time.Minute)
	if !strings.Contains(b.log(), "column v changed type from string to int") {
		t.Fatalf("incompatible change: want a clear error; log:\n%s", tail(b.log(), 10))
	}
	t.Logf("incompatible change stopped the bridge: %s", lastLine(b.log(), "changed type"))
	if got := names(pyicebergSchema(t, tg, "public.items")); got != "id,n,v,price,note,flag" {
		t.Errorf("after the refused change the mirror columns are %s", got)
	}
}
