package integration

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// Updates that leave 1 MB text, jsonb and bytea values unchanged must keep
// them intact in the mirror and the changelog's after image, under REPLICA
// IDENTITY DEFAULT (read back from the mirror) and FULL (old tuple).
func TestUnchangedToast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	// random-ish text so TOAST stores it out of line, uncompressible
	if err := pg.Exec(ctx, `
		CREATE TABLE docs_default (id int PRIMARY KEY, n int, body text, meta jsonb, blob bytea);
		CREATE TABLE docs_full (id int PRIMARY KEY, n int, body text, meta jsonb, blob bytea);
		ALTER TABLE docs_full REPLICA IDENTITY FULL;
		CREATE PUBLICATION docs_pub FOR TABLE docs_default, docs_full;`); err != nil {
		t.Fatal(err)
	}
	conn := pgConn(t, pg)
	big := func(table string, id int) {
		exec1(t, conn, fmt.Sprintf(`INSERT INTO %s SELECT $1, 0,
			(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 32768)),
			jsonb_build_object('k', (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 32768))),
			(SELECT decode(string_agg(md5(random()::text), ''), 'hex') FROM generate_series(1, 16384))`, table), id)
	}
	for _, tb := range []string{"docs_default", "docs_full"} {
		big(tb, 1) // copied by the initial copy
	}
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "docs_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	for _, tb := range []string{"docs_default", "docs_full"} {
		big(tb, 2)
		// Same flush as the insert: the row is still in the open file.
		exec1(t, conn, fmt.Sprintf(`UPDATE %s SET n = n + 1 WHERE id = 2`, tb))
		exec1(t, conn, fmt.Sprintf(`UPDATE %s SET n = n + 1 WHERE id = 1`, tb))
	}
	// Committed: the next updates find the rows in committed files.
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	for _, tb := range []string{"docs_default", "docs_full"} {
		exec1(t, conn, fmt.Sprintf(`UPDATE %s SET n = n + 10`, tb))
		exec1(t, conn, fmt.Sprintf(`UPDATE %s SET n = n + 100 WHERE id = 1`, tb))
	}
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)
	b.stop(t)

	sel := `id::text AS id, n::text AS n, md5(body) AS body, md5(meta::text) AS meta, md5(blob) AS blob`
	for _, tb := range []string{"docs_default", "docs_full"} {
		want := pgRows(t, conn, sel, tb)
		got := hashRows(pyicebergRows(t, tg, "public."+tb))
		compareRows(t, "pyiceberg", tb, "id", got, want)
		got = hashRows(icegoRows(t, tg, "public."+tb))
		compareRows(t, "iceberg-go", tb, "id", got, want)
		// Every changelog after image carries the whole large values.
		wantByID := rowsKey(want, "id")
		n := 0
		for _, r := range pyicebergRows(t, tg, "public."+tb+"__changelog") {
			after, _ := r["after"].(map[string]any)
			if after == nil {
				continue
			}
			n++
			h := hashRows([]row{after})[0]
			w := wantByID[fmt.Sprint(h["id"])]
			for _, col := range []string{"body", "meta", "blob"} {
				if h[col] != w[col] {
					t.Errorf("%s__changelog op %v id %v: after.%s = %v, want %v", tb, r["op"], h["id"], col, h[col], w[col])
				}
			}
		}
		if n != 6 {
			t.Errorf("%s__changelog has %d after images, want 6", tb, n)
		}
	}
}

// hashRows replaces the large columns by their md5, as the PostgreSQL side
// computes them, so rows compare cheaply.
func hashRows(rows []row) []row {
	out := make([]row, len(rows))
	for i, r := range rows {
		c := row{}
		for k, v := range r {
			c[k] = v
		}
		for _, col := range []string{"body", "meta"} {
			if s, ok := r[col].(string); ok {
				sum := md5hex([]byte(s))
				c[col] = sum
			}
		}
		if s, ok := r["blob"].(string); ok && len(s) > 2 {
			raw, _ := hex.DecodeString(s[2:])
			c["blob"] = md5hex(raw)
		}
		out[i] = c
	}
	return out
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}
