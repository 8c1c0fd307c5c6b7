package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// workload is one write pattern: its table, how the table is prepared before
// the slots exist, and the transactions every consumer then reads.
type workload struct {
	name        string
	id          string // name as an SQL identifier: in table, publication and slot names
	description string
	table       string // schema-qualified, in database bench
	columns     int
	prefill     int // rows in the table before the slots are created
	// backfill: the workload is the initial copy of the prefill (see
	// runBackfill); gen is nil.
	backfill bool
	// ddl creates the table; fill inserts rows lo..hi ($1, $2).
	ddl  string
	fill string
	// gen writes the workload. It returns the rows changed, the number of
	// transactions and the WAL insert position taken inside the last
	// transaction just before its COMMIT.
	gen func(ctx context.Context, conn *pgx.Conn) (rows int64, txns int, last pglogrepl.LSN, err error)
}

// The 4-column table of the insert, update, delete and one-transaction
// workloads.
const narrowColumns = `id bigint PRIMARY KEY, k integer NOT NULL, v text NOT NULL, ts timestamptz NOT NULL`

func narrowFill(table, id string) string {
	return `INSERT INTO ` + table + ` (id, k, v, ts)
SELECT ` + id + `, (g % 1000)::int, md5(g::text), now() FROM generate_series($1::bigint, $2::bigint) AS g`
}

// narrowKey returns, for -key, the 4-column table's columns, the key of row
// g as an SQL expression of g, and the condition matching the rows whose g is
// in the bigint array $1. A uuid key is the md5 of g: random order, as
// uuids are.
func narrowKey(key string) (ddl, id, match string) {
	if key == "uuid" {
		return strings.Replace(narrowColumns, "id bigint", "id uuid", 1), "md5(g::text)::uuid",
			"id = ANY(ARRAY(SELECT md5(x::text)::uuid FROM unnest($1::bigint[]) AS x))"
	}
	return narrowColumns, "g", "id = ANY($1::bigint[])"
}

// wideTypes are the 20 column types of the wide table (all mapped by the
// bridge), each with an expression of g for its value.
var wideTypes = []struct{ typ, expr string }{
	{"boolean", "(g % 2 = 0)"},
	{"smallint", "(g % 30000)::smallint"},
	{"integer", "(g * 7 % 2000000000)::integer"},
	{"bigint", "g * 1000003"},
	{"real", "(g / 7.0)::real"},
	{"double precision", "(g / 3.0)::double precision"},
	{"numeric(12,2)", "(g % 1000000 + 0.25)::numeric(12,2)"},
	{"numeric(38,10)", "(g * 1.0000000001)::numeric(38,10)"},
	{"numeric", "round(g::numeric / 7, 12)"},
	{"text", "md5(g::text)"},
	{"varchar(64)", "'customer-' || g"},
	{"char(8)", "lpad((g % 100000)::text, 8, '0')"},
	{"bytea", "decode(md5(g::text), 'hex')"},
	{"date", "date '2020-01-01' + (g % 3000)::int"},
	{"time", "time '00:00' + make_interval(secs => g % 86400)"},
	{"timestamp", "timestamp '2020-01-01' + make_interval(secs => g)"},
	{"timestamptz", "now() - make_interval(secs => g % 100000)"},
	{"uuid", "md5(g::text)::uuid"},
	{"json", "json_build_object('g', g, 's', 'x')"},
	{"jsonb", "jsonb_build_object('g', g, 'tags', jsonb_build_array('a', 'b'))"},
}

// wideSQL returns the wide table's column list and fill expressions: id plus
// the 20 types, then the first 19 again with a NULL in every fifth row,
// 40 columns in all.
func wideSQL(table string) (ddl, fill string) {
	cols := []string{"id bigint PRIMARY KEY"}
	names := []string{"id"}
	exprs := []string{"g"}
	n := 0
	for round := 0; round < 2; round++ {
		for i, t := range wideTypes {
			if round == 1 && i == len(wideTypes)-1 {
				break
			}
			n++
			name := fmt.Sprintf("c%02d", n)
			cols = append(cols, name+" "+t.typ)
			names = append(names, name)
			expr := t.expr
			if round == 1 {
				expr = "CASE WHEN g % 5 = 0 THEN NULL ELSE " + expr + " END"
			}
			exprs = append(exprs, expr)
		}
	}
	ddl = strings.Join(cols, ", ")
	fill = `INSERT INTO ` + table + ` (` + strings.Join(names, ", ") + `)
SELECT ` + strings.Join(exprs, ", ") + ` FROM generate_series($1::bigint, $2::bigint) AS g`
	return ddl, fill
}

func (e *env) workload(name string) *workload {
	c := e.cfg
	id := strings.ReplaceAll(name, "-", "_")
	ddl, key, match := narrowKey(c.key)
	w := &workload{name: name, id: id, table: "bench.w_" + id, columns: 4, ddl: ddl}
	w.fill = narrowFill(w.table, key)
	switch name {
	case "insert":
		w.description = fmt.Sprintf("insert-only: %d rows in %d-row transactions, 4-column table", c.insertRows, c.txnRows)
		w.gen = func(ctx context.Context, conn *pgx.Conn) (int64, int, pglogrepl.LSN, error) {
			return insertRange(ctx, conn, w.fill, 1, c.insertRows, c.txnRows)
		}
	case "update":
		w.prefill = c.updateTableRows
		w.description = fmt.Sprintf("update-heavy: %d updates of random keys of a %d-row table, %d per transaction", c.updates, c.updateTableRows, c.txnRows)
		sql := `UPDATE ` + w.table + ` SET k = k + 1, v = md5(v), ts = now() WHERE ` + match
		w.gen = func(ctx context.Context, conn *pgx.Conn) (int64, int, pglogrepl.LSN, error) {
			return byRandomKeys(ctx, conn, sql, c.updateTableRows, c.updates, c.txnRows)
		}
	case "delete":
		w.prefill = c.deleteTableRows
		w.description = fmt.Sprintf("delete-heavy: %d deletes of random keys of a %d-row table, %d per transaction", c.deletes, c.deleteTableRows, c.txnRows)
		sql := `DELETE FROM ` + w.table + ` WHERE ` + match
		w.gen = func(ctx context.Context, conn *pgx.Conn) (int64, int, pglogrepl.LSN, error) {
			return byRandomKeys(ctx, conn, sql, c.deleteTableRows, c.deletes, c.txnRows)
		}
	case "bigtxn":
		w.description = fmt.Sprintf("one transaction of %d inserted rows, 4-column table", c.bigTxnRows)
		w.gen = func(ctx context.Context, conn *pgx.Conn) (int64, int, pglogrepl.LSN, error) {
			return insertRange(ctx, conn, w.fill, 1, c.bigTxnRows, c.bigTxnRows)
		}
	case "wide":
		w.columns = 40
		w.ddl, w.fill = wideSQL(w.table)
		w.description = fmt.Sprintf("wide table: %d rows of 40 columns (20 types, NULLs in every 5th row of 19 of them) in %d-row transactions", c.wideRows, c.txnRows)
		w.gen = func(ctx context.Context, conn *pgx.Conn) (int64, int, pglogrepl.LSN, error) {
			return insertRange(ctx, conn, w.fill, 1, c.wideRows, c.txnRows)
		}
	case "backfill":
		w.backfill, w.prefill = true, c.backfillRows
		w.description = fmt.Sprintf("initial copy of a %d-row table, 4 columns, against COPY (FORMAT binary) to /dev/null", c.backfillRows)
	case "backfill-wide":
		w.backfill, w.prefill, w.columns = true, c.backfillWide, 40
		w.ddl, w.fill = wideSQL(w.table)
		w.description = fmt.Sprintf("initial copy of a %d-row table, 40 columns (the wide table), against COPY (FORMAT binary) to /dev/null", c.backfillWide)
	}
	if c.key == "uuid" && !strings.HasPrefix(name, "wide") && name != "backfill-wide" {
		w.description += ", " + c.key + " key"
	}
	return w
}

// txn runs one statement as one transaction. With last set it also reads
// the WAL insert position just before COMMIT.
func txn(ctx context.Context, conn *pgx.Conn, last bool, sql string, args ...any) (int64, pglogrepl.LSN, error) {
	if !last {
		tag, err := conn.Exec(ctx, sql, args...)
		if err != nil {
			return 0, 0, fmt.Errorf("workload statement: %w", err)
		}
		return tag.RowsAffected(), 0, nil
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background())
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("workload statement: %w", err)
	}
	lsn, err := insertLSN(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("commit: %w", err)
	}
	return tag.RowsAffected(), lsn, nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func insertLSN(ctx context.Context, q queryer) (pglogrepl.LSN, error) {
	var s string
	if err := q.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s); err != nil {
		return 0, fmt.Errorf("read wal insert lsn: %w", err)
	}
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return 0, fmt.Errorf("parse lsn %q: %w", s, err)
	}
	return lsn, nil
}

// insertRange inserts rows lo..hi with fill, per transactions of per rows.
func insertRange(ctx context.Context, conn *pgx.Conn, fill string, lo, hi, per int) (int64, int, pglogrepl.LSN, error) {
	var rows int64
	var txns int
	var last pglogrepl.LSN
	for a := lo; a <= hi; a += per {
		b := min(a+per-1, hi)
		n, lsn, err := txn(ctx, conn, b == hi, fill, a, b)
		if err != nil {
			return rows, txns, 0, err
		}
		rows += n
		txns++
		last = lsn
	}
	return rows, txns, last, nil
}

// byRandomKeys runs sql (with $1 = an array of keys) over changes keys of a
// table with keys 1..tableRows, per keys per transaction. The keys follow a
// fixed random permutation of the table, so they are distinct within a
// transaction, and each key is hit once before any is hit twice.
func byRandomKeys(ctx context.Context, conn *pgx.Conn, sql string, tableRows, changes, per int) (int64, int, pglogrepl.LSN, error) {
	perm := rand.New(rand.NewPCG(7, 11)).Perm(tableRows)
	var rows int64
	var txns int
	var last pglogrepl.LSN
	keys := make([]int64, 0, per)
	for done := 0; done < changes; {
		n := min(per, changes-done)
		keys = keys[:0]
		for i := 0; i < n; i++ {
			keys = append(keys, int64(perm[(done+i)%tableRows])+1)
		}
		done += n
		got, lsn, err := txn(ctx, conn, done == changes, sql, keys)
		if err != nil {
			return rows, txns, 0, err
		}
		rows += got
		txns++
		last = lsn
	}
	return rows, txns, last, nil
}

// prepare creates the workload's table (filled with its prefill rows) and
// publication. It runs before any slot exists, so the prefill is copied by
// the bridges' first start and never decoded.
func (e *env) prepare(ctx context.Context, conn *pgx.Conn, w *workload, pub string) error {
	stmts := []string{
		"DROP PUBLICATION IF EXISTS " + pub,
		"DROP TABLE IF EXISTS " + w.table,
		// No autovacuum: it would compete for the CPU during the timed runs.
		"CREATE TABLE " + w.table + " (" + w.ddl + ") WITH (autovacuum_enabled = false)",
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if w.prefill > 0 {
		start := time.Now()
		if _, err := conn.Exec(ctx, w.fill, 1, w.prefill); err != nil {
			return fmt.Errorf("prefill %s: %w", w.table, err)
		}
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+w.table); err != nil {
			return fmt.Errorf("vacuum %s: %w", w.table, err)
		}
		logf("prefilled %s with %d rows in %s", w.table, w.prefill, time.Since(start).Round(time.Millisecond))
	}
	if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+w.table); err != nil {
		return fmt.Errorf("create publication %s: %w", pub, err)
	}
	return nil
}
