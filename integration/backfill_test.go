package integration

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// A 5,000,000-row table (1,000,000 under make test: four chunks of 2,048
// pages for two workers) is backfilled by parallel workers while a write
// load updates and deletes its rows; the bridge is killed with SIGKILL
// after the copy committed its first chunk and restarted: it copies only
// the chunks not committed (in a new snapshot, the stream replaying every
// change since the first), and afterwards the mirror equals Postgres row
// for row (compared by an ordered digest of every row).
func TestBackfillUnderLoadWithKill(t *testing.T) {
	t.Parallel()
	rows := int64(size(1_000_000, 5_000_000))
	ctx := context.Background()
	pg, conn := startSource(t, fmt.Sprintf(`
		CREATE TABLE big (id bigint PRIMARY KEY, n int NOT NULL, v text NOT NULL);
		INSERT INTO big SELECT g, 0, 'row ' || g FROM generate_series(1, %d) g;
		CREATE TABLE small (id int PRIMARY KEY, v text);
		INSERT INTO small SELECT g, 's' || g FROM generate_series(1, 1000) g;
		ANALYZE big;
		CREATE PUBLICATION bf_pub FOR TABLE big, small;`, rows))
	tg := localTarget(t)
	addr := freeAddr(t)
	args := runArgs(pg, "bf_pub", tg, "--backfill-workers", "2", "--metrics-addr", addr)

	stop := writeLoad(t, pg, 2*time.Millisecond, func(ctx context.Context, lc *pgx.Conn, i int) error { // for the whole test
		k := int64(i+1)*7919%rows + 1
		for _, q := range []string{
			`UPDATE big SET n = n + 1, v = 'updated ' || $1 WHERE id = $1`,
			`DELETE FROM big WHERE id = $1 + 1`,
			`UPDATE small SET v = 'u' || $1 WHERE id = $1 % 1000 + 1`,
		} {
			if _, err := lc.Exec(ctx, q, k); err != nil {
				return err
			}
		}
		return nil
	})

	b := startBridge(t, nil, args...)
	deadline := time.Now().Add(3 * time.Minute)
	// Kill once the copy of big has committed its first chunk. Meanwhile
	// /status shows the copy's progress.
	var during int64
	for !strings.Contains(b.log(), `msg="copy chunk committed" table=public.big`) {
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("the copy of big committed no chunk; log:\n%s", tail(b.log(), 20))
		}
		if during == 0 {
			during = backfillRows(addr, "public.big")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if during <= 0 {
		t.Errorf("/status showed no backfill progress of public.big during the copy")
	}
	_ = b.cmd.Process.Kill() // SIGKILL halfway through the copy
	b.exited(t, time.Minute)
	if strings.Contains(b.log(), `msg="copy finished" table=public.big`) {
		t.Fatalf("the copy of big finished before the kill; log:\n%s", tail(b.log(), 20))
	}
	t.Logf("killed during the copy: %s", lastLine(b.log(), "copy chunk committed"))

	b = startBridge(t, nil, args...)
	waitSlot(t, conn, "pg2iceberg_bf_pub", b)
	// Streaming under load after the copy: once the copy of big has
	// finished, the slot acknowledges a WAL position the load writes past.
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(b.log(), `msg="copy finished" table=public.big`); {
		if time.Now().After(deadline) || !b.running() {
			t.Fatalf("the restarted bridge did not finish copying big within 3 minutes; log:\n%s", tail(b.log(), 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitCaughtUp(t, conn, "pg2iceberg_bf_pub", b)
	stop()
	waitCaughtUp(t, conn, "pg2iceberg_bf_pub", b)
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Backfill map[string]map[string]int64 `json:"backfill"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if bf := st.Backfill["public.big"]; bf["rows"] < rows/2 || bf["rows"] != bf["estimated_rows"] {
		t.Errorf("/status backfill of public.big = %v, want all rows copied", bf)
	}
	b.stop(t)
	if !strings.Contains(b.log(), `msg="copy finished" table=public.big`) {
		t.Fatalf("the restarted bridge did not finish copying big; log:\n%s", tail(b.log(), 20))
	}
	// The restart kept the committed chunks: it copied only the rest.
	resumed := lastLine(b.log(), `msg="copy resumed`)
	finished := lastLine(b.log(), `msg="copy finished" table=public.big`)
	t.Logf("restart: %s\n%s", resumed, finished)
	var copied int64
	_, after, _ := strings.Cut(finished, "rows_copied=")
	if _, err := fmt.Sscanf(after, "%d", &copied); err != nil || !strings.Contains(resumed, "table=public.big") || copied <= 0 || copied >= rows {
		t.Errorf("the restart did not resume the copy of big (copied %d of %d rows again)", copied, rows)
	}

	var wantCount int64
	var wantDigest string
	if err := conn.QueryRow(ctx, `SELECT count(*), md5(string_agg(id || ':' || n || ':' || v, ',' ORDER BY id)) FROM big`).Scan(&wantCount, &wantDigest); err != nil {
		t.Fatal(err)
	}
	gotCount, gotDigest := icegoDigest(t, tg, "public.big")
	if gotCount != wantCount || gotDigest != wantDigest {
		t.Fatalf("mirror of big: %d rows, digest %s; Postgres: %d rows, digest %s", gotCount, gotDigest, wantCount, wantDigest)
	}
	t.Logf("mirror of big equals Postgres: %d rows, digest %s", gotCount, gotDigest)
	compareRows(t, "pyiceberg", "small", "id", pyicebergRows(t, tg, "public.small"), pgRows(t, conn, "id::text AS id, v", "small"))
}

// backfillRows reads a table's copied rows from /status (0 when the server
// is not up yet or has no figure).
func backfillRows(addr, table string) int64 {
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var st struct {
		Backfill map[string]map[string]int64 `json:"backfill"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0
	}
	return st.Backfill[table]["rows"]
}

func lastLine(log, substr string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], substr) {
			return lines[i]
		}
	}
	return ""
}

// icegoDigest reads (id bigint, n int, v text) with iceberg-go and returns
// the row count and the md5 of "id:n:v" rows joined by "," in id order.
func icegoDigest(t *testing.T, tg target, name string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogConfig{Warehouse: tg.warehouse, Catalog: tg.catalog})
	if err != nil {
		t.Fatal(err)
	}
	ns, tbl, _ := strings.Cut(name, ".")
	tb, err := cat.LoadTable(ctx, table.Identifier{ns, tbl})
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tb.Scan(table.WithSelectedFields("id", "n", "v")).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type r struct {
		id int64
		s  string
	}
	var all []r
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		ns := rec.Column(rec.Schema().FieldIndices("n")[0]).(*array.Int32)
		vs := rec.Column(rec.Schema().FieldIndices("v")[0])
		for i := 0; i < int(rec.NumRows()); i++ {
			all = append(all, r{ids.Value(i), fmt.Sprintf("%d:%d:%s", ids.Value(i), ns.Value(i), vs.ValueStr(i))})
		}
		rec.Release()
	}
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	h := md5.New()
	for i, x := range all {
		if i > 0 {
			h.Write([]byte(","))
		}
		h.Write([]byte(x.s))
	}
	return int64(len(all)), hex.EncodeToString(h.Sum(nil))
}
