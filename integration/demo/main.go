// Command demo shows pg2iceberg end to end on one machine.
//
// It starts a throw-away PostgreSQL (integration/harness), creates a small
// shop schema with a publication, runs bin/pg2iceberg into ./warehouse,
// drives a write load against the source, waits until the bridge has
// acknowledged everything, stops it, and prints what the Iceberg tables
// hold, read back with iceberg-go. It exits 1 if the mirror does not match
// the source.
//
// Run it from the repository root (make demo does both steps):
//
//	go build -o bin/pg2iceberg . && go run ./integration/demo
//
// Flags: -duration sets the length of the write load (default 15s); -keep
// leaves PostgreSQL running after the summary, so the printed commands can
// be tried against it, until Ctrl-C.
package main

import (
	"context"
	dbsql "database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" driver for the warehouse's catalog.db

	"github.com/pg2iceberg/pg2iceberg/deploy"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

const (
	bridgeBin   = "bin/pg2iceberg"
	warehouse   = "warehouse"
	database    = "demo"
	publication = "shop_pub"
	slot        = "pg2iceberg_" + publication // the bridge's default slot name
)

var (
	flagDuration = flag.Duration("duration", 15*time.Second, "how long the write load runs")
	flagKeep     = flag.Bool("keep", false, "keep PostgreSQL running after the summary until Ctrl-C")
)

// keeping is set while -keep waits for Ctrl-C.
var keeping atomic.Bool

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func main() {
	flag.Parse()
	os.Exit(run())
}

// demo holds what the steps share.
type demo struct {
	pg       *harness.Postgres
	srcURL   string // superuser URL without the password (it goes in PGPASSWORD)
	whAbs    string
	bridge   *exec.Cmd
	exited   chan struct{} // closed when the bridge process has exited
	exitErr  error         // the bridge's exit status, valid once exited is closed
	load     loadStats
	failures []string
}

func run() int {
	// The first Ctrl-C (or SIGTERM) cancels ctx: the load stops between
	// transactions, then the bridge and PostgreSQL are stopped in order.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for range sigs {
			if ctx.Err() == nil {
				if keeping.Load() {
					fmt.Println()
				} else {
					fmt.Println("\n==> interrupted: stopping the load, the bridge and PostgreSQL")
				}
				cancel()
			} else {
				fmt.Println("==> still stopping (the bridge gets up to a minute to commit)")
			}
		}
	}()

	d := &demo{}
	if err := d.prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	err := d.run(ctx)
	interrupted := ctx.Err() != nil
	d.stopBridge()
	if d.pg != nil {
		if *flagKeep && err == nil && !interrupted {
			d.keep(ctx)
		}
		say("stopping PostgreSQL")
		if serr := d.pg.Stop(); serr != nil {
			fmt.Fprintln(os.Stderr, "demo:", serr)
		}
	}
	switch {
	case interrupted:
		say("interrupted; ./%s holds whatever the bridge committed", warehouse)
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	case len(d.failures) > 0:
		fmt.Fprintf(os.Stderr, "demo: FAILED: %s\n", strings.Join(d.failures, "; "))
		return 1
	}
	say("demo finished: the Iceberg tables match PostgreSQL")
	return 0
}

// prepare checks the binary and clears the warehouse.
func (d *demo) prepare() error {
	if _, err := os.Stat(bridgeBin); err != nil {
		return fmt.Errorf("%s not found: run this from the repository root after `go build -o %s .` (make demo does both)", bridgeBin, bridgeBin)
	}
	abs, err := filepath.Abs(warehouse)
	if err != nil {
		return err
	}
	d.whAbs = abs
	if _, err := os.Stat(abs); err == nil {
		say("removing the previous demo warehouse %s", abs)
		if err := os.RemoveAll(abs); err != nil {
			return fmt.Errorf("remove %s: %w", abs, err)
		}
	}
	return nil
}

func (d *demo) run(ctx context.Context) error {
	say("starting a throw-away PostgreSQL (wal_level=logical)")
	pg, err := harness.StartPostgres(ctx, harness.PostgresOptions{Logf: func(f string, a ...any) { say(f, a...) }})
	if err != nil {
		return err
	}
	d.pg = pg
	d.srcURL = pg.URL(pg.SuperUser, "", database)

	if err := d.createSchema(ctx); err != nil {
		return err
	}
	if err := d.startBridge(); err != nil {
		return err
	}
	if err := d.waitForSlot(ctx); err != nil {
		return err
	}
	target, err := d.runLoad(ctx)
	if err != nil {
		return err
	}
	if err := d.waitForAck(ctx, target); err != nil {
		return err
	}
	say("stopping the bridge with SIGINT (it commits what is pending and exits)")
	d.stopBridge()
	if d.exitErr != nil {
		return fmt.Errorf("the bridge did not stop cleanly: %w", d.exitErr)
	}
	if err := d.status(ctx); err != nil {
		return err
	}
	if err := d.report(ctx); err != nil {
		return err
	}
	d.nextSteps()
	return nil
}

// ---------------------------------------------------------------- source

func (d *demo) createSchema(ctx context.Context) error {
	if err := d.pg.Exec(ctx, "CREATE DATABASE "+database); err != nil {
		return err
	}
	if err := d.pg.ExecDB(ctx, database, deploy.ShopSQL); err != nil {
		return err
	}
	say("created shop.customers (50 rows), shop.orders (200 rows) and publication %s in database %q", publication, database)
	return nil
}

// ---------------------------------------------------------------- bridge

func (d *demo) bridgeEnv() []string {
	return append(os.Environ(), "PGPASSWORD="+d.pg.SuperPassword)
}

func (d *demo) startBridge() error {
	args := []string{"run", "--source", d.srcURL, "--publication", publication,
		"--warehouse", "./" + warehouse, "--flush-interval", "2s"}
	say("starting: %s %s   (password in PGPASSWORD; its log follows on stderr)", bridgeBin, strings.Join(args, " "))
	cmd := exec.Command(bridgeBin, args...)
	cmd.Env = d.bridgeEnv()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group: Ctrl-C in the terminal reaches only the demo,
	// which stops the load first and then the bridge.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bridgeBin, err)
	}
	d.bridge = cmd
	d.exited = make(chan struct{})
	go func() {
		d.exitErr = cmd.Wait()
		close(d.exited)
	}()
	return nil
}

// bridgeGone returns an error if the bridge has exited.
func (d *demo) bridgeGone() error {
	select {
	case <-d.exited:
		if d.exitErr != nil {
			return fmt.Errorf("the bridge exited early (%v): see its log above", d.exitErr)
		}
		return errors.New("the bridge exited early: see its log above")
	default:
		return nil
	}
}

// stopBridge sends SIGINT and waits; after a minute it kills the bridge.
func (d *demo) stopBridge() {
	if d.bridge == nil {
		return
	}
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.bridge.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "demo: the bridge did not stop within a minute of SIGINT; killing it")
		_ = d.bridge.Process.Kill()
		<-d.exited
	}
}

// poll runs check every interval until it reports done, the bridge exits,
// the timeout passes or ctx ends.
func (d *demo) poll(ctx context.Context, timeout time.Duration, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := d.bridgeGone(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (d *demo) waitForSlot(ctx context.Context) error {
	conn, err := d.pg.Conn(ctx, database)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return d.poll(ctx, 2*time.Minute, "the bridge to create slot "+slot, func() (bool, error) {
		var n int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n)
		return n == 1, err
	})
}

// waitForAck waits until the slot's confirmed_flush_lsn reaches target:
// the bridge has committed (or skipped as irrelevant) everything before it.
func (d *demo) waitForAck(ctx context.Context, target pglogrepl.LSN) error {
	conn, err := d.pg.Conn(ctx, database)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	say("waiting until slot %s confirms LSN %s (the WAL position after the load)", slot, target)
	start := time.Now()
	var confirmed pglogrepl.LSN
	err = d.poll(ctx, 2*time.Minute, "the bridge to acknowledge "+target.String(), func() (bool, error) {
		var text *string
		if err := conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&text); err != nil {
			return false, err
		}
		if text == nil {
			return false, nil
		}
		lsn, err := pglogrepl.ParseLSN(*text)
		if err != nil {
			return false, err
		}
		confirmed = lsn
		return lsn >= target, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last confirmed_flush_lsn %s)", err, confirmed)
	}
	say("slot confirmed %s after %s", confirmed, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// status runs `pg2iceberg status` while the source is still up.
func (d *demo) status(ctx context.Context) error {
	args := []string{"status", "--source", d.srcURL, "--publication", publication, "--warehouse", "./" + warehouse}
	say("%s %s", bridgeBin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bridgeBin, args...)
	cmd.Env = d.bridgeEnv()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg2iceberg status: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------- load

// loadStats counts committed row changes per table (what each changelog
// should hold) and transactions.
type loadStats struct {
	txns      int
	customers int // rows inserted or updated in shop.customers
	orders    int // rows inserted, updated or deleted in shop.orders
	inserted  int // orders inserted
	updated   int // orders updated
	deleted   int // orders deleted
}

var statuses = []string{"pending", "paid", "shipped", "delivered"}

// runLoad writes small transactions for the configured duration and returns
// the WAL position after the last one.
func (d *demo) runLoad(ctx context.Context) (pglogrepl.LSN, error) {
	conn, err := d.pg.Conn(ctx, database)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	// The harness runs PostgreSQL with synchronous_commit=off, so a commit
	// may return before its WAL is written, and pg_current_wal_lsn() may lag
	// behind the last commit. With it on for the load's session, every
	// commit is in the WAL (and visible to the walsender) when it returns.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return 0, err
	}
	say("running a write load for %s: new orders, status updates, cancellations (deletes), new customers", *flagDuration)
	// Transactions run on a context Ctrl-C does not cancel, so one is never
	// left in doubt; the loop stops between transactions.
	tctx := context.WithoutCancel(ctx)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	end := time.Now().Add(*flagDuration)
	nextReport := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := d.bridgeGone(); err != nil {
			return 0, err
		}
		if err := d.oneTxn(tctx, conn, rng); err != nil {
			return 0, err
		}
		if time.Now().After(nextReport) {
			nextReport = time.Now().Add(5 * time.Second)
			say("load: %d transactions so far (orders +%d ~%d -%d, customer changes %d)",
				d.load.txns, d.load.inserted, d.load.updated, d.load.deleted, d.load.customers)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(20+rng.IntN(40)) * time.Millisecond):
		}
	}
	var text string
	if err := conn.QueryRow(tctx, "SELECT pg_current_wal_lsn()::text").Scan(&text); err != nil {
		return 0, err
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		return 0, err
	}
	say("load done: %d transactions; orders: %d inserted, %d updated, %d deleted; customers: %d rows changed",
		d.load.txns, d.load.inserted, d.load.updated, d.load.deleted, d.load.customers)
	return lsn, nil
}

// oneTxn runs one small random transaction and counts what it changed.
func (d *demo) oneTxn(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var s loadStats
	do := func(sql string, args ...any) (int, error) {
		tag, err := tx.Exec(ctx, sql, args...)
		return int(tag.RowsAffected()), err
	}
	switch p := rng.IntN(100); {
	case p < 40: // a customer places 1-3 orders
		n, err := do(`
			INSERT INTO shop.orders (customer_id, amount, details)
			SELECT c.id, round((5 + random() * 300)::numeric, 2),
			       jsonb_build_object('items', 1 + g % 4, 'channel', $2::text)
			FROM (SELECT id FROM shop.customers ORDER BY random() LIMIT 1) c, generate_series(1, $1) g`,
			1+rng.IntN(3), []string{"web", "app", "store"}[rng.IntN(3)])
		if err != nil {
			return err
		}
		s.inserted += n
	case p < 75: // an order moves on; paying it also charges the customer
		from := rng.IntN(3)
		var id, cust int64
		var amount string
		err := tx.QueryRow(ctx, `
			UPDATE shop.orders SET status = $2
			WHERE id = (SELECT id FROM shop.orders WHERE status = $1 ORDER BY random() LIMIT 1)
			RETURNING id, customer_id, amount::text`, statuses[from], statuses[from+1]).Scan(&id, &cust, &amount)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return err
		}
		s.updated++
		if statuses[from+1] == "paid" {
			n, err := do("UPDATE shop.customers SET balance = balance + $2::numeric WHERE id = $1", cust, amount)
			if err != nil {
				return err
			}
			s.customers += n
		}
	case p < 85: // a pending order is cancelled
		n, err := do("DELETE FROM shop.orders WHERE id = (SELECT id FROM shop.orders WHERE status = 'pending' ORDER BY random() LIMIT 1)")
		if err != nil {
			return err
		}
		s.deleted += n
	case p < 95: // a new customer signs up
		n, err := do("INSERT INTO shop.customers (name, email) SELECT 'customer ' || x, 'customer' || x || '@example.com' FROM (SELECT coalesce(max(id), 0) + 1 AS x FROM shop.customers) s")
		if err != nil {
			return err
		}
		s.customers += n
	default: // a customer changes their email
		n, err := do("UPDATE shop.customers SET email = 'c' || id || '.' || $1::int || '@example.org' WHERE id = (SELECT id FROM shop.customers ORDER BY random() LIMIT 1)", rng.IntN(1000))
		if err != nil {
			return err
		}
		s.customers += n
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	d.load.txns++
	d.load.customers += s.customers
	d.load.inserted += s.inserted
	d.load.updated += s.updated
	d.load.deleted += s.deleted
	d.load.orders += s.inserted + s.updated + s.deleted
	return nil
}

// ---------------------------------------------------------------- report

// tableData is an Iceberg table read into memory, rows as display strings.
type tableData struct {
	columns []string
	rows    [][]string
}

func readTable(ctx context.Context, cat *sqlcat.Catalog, name string) (*tableData, error) {
	ident := table.Identifier(strings.Split(name, "."))
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", name, err)
	}
	defer at.Release()
	td := &tableData{}
	sc := at.Schema()
	for _, f := range sc.Fields() {
		td.columns = append(td.columns, f.Name)
	}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]string, rec.NumCols())
			for c := range row {
				row[c] = cell(rec.Column(c), r)
			}
			td.rows = append(td.rows, row)
		}
	}
	if err := tr.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return td, nil
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	if ts, ok := a.(*array.Timestamp); ok {
		unit := ts.DataType().(*arrow.TimestampType).Unit
		t := ts.Value(i).ToTime(unit).UTC()
		return t.Format("2006-01-02 15:04:05.000000Z")
	}
	if st, ok := a.(*array.Struct); ok {
		// Fields in schema order (ValueStr would sort them by name).
		t := st.DataType().(*arrow.StructType)
		parts := make([]string, st.NumField())
		for f := range parts {
			parts[f] = t.Field(f).Name + "=" + cell(st.Field(f), i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if dec, ok := a.(*array.Decimal128); ok {
		// ValueStr drops trailing zeros; keep the column's scale as
		// PostgreSQL prints it.
		return dec.Value(i).ToString(dec.DataType().(*arrow.Decimal128Type).Scale)
	}
	return a.ValueStr(i)
}

func (td *tableData) col(name string) int {
	for i, c := range td.columns {
		if c == name {
			return i
		}
	}
	return -1
}

// sortBy orders rows by the numeric values of the named columns.
func (td *tableData) sortBy(names ...string) {
	idx := make([]int, 0, len(names))
	for _, n := range names {
		if i := td.col(n); i >= 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(td.rows, func(a, b int) bool {
		for _, i := range idx {
			x, _ := strconv.ParseInt(td.rows[a][i], 10, 64)
			y, _ := strconv.ParseInt(td.rows[b][i], 10, 64)
			if x != y {
				return x < y
			}
		}
		return false
	})
}

func (td *tableData) print(name string, n int) {
	fmt.Printf("\n%s: %d rows", name, len(td.rows))
	if len(td.rows) > n {
		fmt.Printf(" (first %d)", n)
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  "+strings.Join(td.columns, "\t"))
	for _, row := range td.rows[:min(n, len(td.rows))] {
		cells := make([]string, len(row))
		for i, c := range row {
			if len(c) > 70 {
				c = c[:67] + "..."
			}
			cells[i] = c
		}
		fmt.Fprintln(w, "  "+strings.Join(cells, "\t"))
	}
	_ = w.Flush()
}

func (d *demo) check(ok bool, format string, args ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if ok {
		fmt.Println("  OK        " + msg)
		return
	}
	fmt.Println("  MISMATCH  " + msg)
	d.failures = append(d.failures, msg)
}

// sourceMap reads "id → column" of a source table.
func sourceMap(ctx context.Context, conn *pgx.Conn, sql string) (map[string]string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

func (td *tableData) toMap(key, val string) map[string]string {
	k, v := td.col(key), td.col(val)
	out := map[string]string{}
	if k < 0 || v < 0 {
		return out
	}
	for _, row := range td.rows {
		out[row[k]] = row[v]
	}
	return out
}

func sameMap(a, b map[string]string) (bool, string) {
	for k, v := range a {
		if w, ok := b[k]; !ok {
			return false, "(id " + k + " missing from Iceberg)"
		} else if w != v {
			return false, fmt.Sprintf("(id %s is %q in PostgreSQL, %q in Iceberg)", k, v, w)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return false, "(id " + k + " in Iceberg but not in PostgreSQL)"
		}
	}
	return true, ""
}

func (d *demo) report(ctx context.Context) error {
	say("reading the Iceberg tables with iceberg-go (SQL catalog %s/catalog.db)", d.whAbs)
	db, err := dbsql.Open("sqlite", "file:"+filepath.Join(d.whAbs, "catalog.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pg2iceberg", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + d.whAbs})
	if err != nil {
		return fmt.Errorf("open the warehouse's catalog: %w", err)
	}
	tables := map[string]*tableData{}
	for _, name := range []string{"shop.customers", "shop.orders", "shop.orders__changelog", "shop.customers__changelog"} {
		td, err := readTable(ctx, cat, name)
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, "__changelog") {
			td.sortBy("lsn", "seq")
		} else {
			td.sortBy("id")
		}
		tables[name] = td
	}
	for _, name := range []string{"shop.customers", "shop.orders", "shop.orders__changelog"} {
		tables[name].print(name, 5)
	}

	conn, err := d.pg.Conn(ctx, database)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	fmt.Println("\nchecks against PostgreSQL:")
	for _, name := range []string{"shop.customers", "shop.orders"} {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+name).Scan(&n); err != nil {
			return err
		}
		got := len(tables[name].rows)
		d.check(got == n, "%-26s %6d rows in Iceberg, %6d in PostgreSQL", name, got, n)
	}
	src, err := sourceMap(ctx, conn, "SELECT id::text, status FROM shop.orders")
	if err != nil {
		return err
	}
	ok, why := sameMap(src, tables["shop.orders"].toMap("id", "status"))
	d.check(ok, "%-26s every order's status equals PostgreSQL's %s", "shop.orders", why)
	src, err = sourceMap(ctx, conn, "SELECT id::text, balance::text FROM shop.customers")
	if err != nil {
		return err
	}
	ok, why = sameMap(src, tables["shop.customers"].toMap("id", "balance"))
	d.check(ok, "%-26s every customer's balance equals PostgreSQL's %s", "shop.customers", why)
	for _, c := range []struct {
		name string
		want int
	}{{"shop.orders__changelog", d.load.orders}, {"shop.customers__changelog", d.load.customers}} {
		got := len(tables[c.name].rows)
		d.check(got == c.want, "%-26s %6d rows in Iceberg, %6d row changes made by the load", c.name, got, c.want)
	}
	return nil
}

func (d *demo) nextSteps() {
	catURI := "sqlite:///" + filepath.Join(d.whAbs, "catalog.db")
	fmt.Printf(`
What to try next
----------------
Read the tables with pyiceberg (installed by scripts/setup.sh):

  python3 - <<'EOF'
  from pyiceberg.catalog.sql import SqlCatalog
  cat = SqlCatalog("pg2iceberg", uri="%s", warehouse="file://%s")
  orders = cat.load_table("shop.orders").scan().to_arrow()
  print(orders.num_rows, "orders")
  print(orders.group_by("status").aggregate([("id", "count")]))
  changes = cat.load_table("shop.orders__changelog").scan(selected_fields=("op", "lsn", "seq", "after")).to_arrow()
  print(changes.sort_by([("lsn", "ascending"), ("seq", "ascending")]).slice(0, 5).to_pylist())
  EOF

Point the bridge at your own database (see README.md and docs/configuration.md):

  psql -c "CREATE PUBLICATION shop_pub FOR TABLE shop.customers, shop.orders"
  PGPASSWORD=... %s run --source postgres://repl_user@db-host:5432/shop --publication shop_pub --warehouse ./warehouse
  PGPASSWORD=... %s status --source postgres://repl_user@db-host:5432/shop --publication shop_pub --warehouse ./warehouse
`, catURI, d.whAbs, bridgeBin, bridgeBin)
	if !*flagKeep {
		fmt.Println("\nThe demo's PostgreSQL stops now; run `go run ./integration/demo -keep` to keep it up and try the bridge against it.")
	}
}

// keep leaves PostgreSQL running until Ctrl-C, with commands to try.
func (d *demo) keep(ctx context.Context) {
	fmt.Printf(`
PostgreSQL stays up until Ctrl-C (-keep). Try, in another terminal from this directory:

  export PGPASSWORD='%s'
  %s '%s' -c "UPDATE shop.orders SET status = 'delivered' WHERE status = 'shipped'"
  %s run --source '%s' --publication %s --warehouse ./%s --flush-interval 2s
  %s status --source '%s' --publication %s --warehouse ./%s
`, d.pg.SuperPassword, filepath.Join(d.pg.BinDir, "psql"), d.srcURL, bridgeBin, d.srcURL, publication, warehouse, bridgeBin, d.srcURL, publication, warehouse)
	keeping.Store(true)
	<-ctx.Done()
}
