package replication

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

const secret = "Zq9-s3cret"

func TestParseConfig(t *testing.T) {
	for _, repl := range []bool{false, true} {
		cfg, err := parseConfig("postgres://app:"+secret+"@db.example:6432/shop?sslmode=disable", repl)
		if err != nil {
			t.Fatalf("parseConfig(replication %v): %v", repl, err)
		}
		if cfg.Host != "db.example" || cfg.Port != 6432 || cfg.Database != "shop" || cfg.User != "app" || cfg.Password != secret {
			t.Errorf("parseConfig(replication %v) = host %s port %d db %s user %s, want db.example 6432 shop app", repl, cfg.Host, cfg.Port, cfg.Database, cfg.User)
		}
		for k, v := range sessionParams {
			if cfg.RuntimeParams[k] != v {
				t.Errorf("parseConfig(replication %v): session parameter %s = %q, want %q", repl, k, cfg.RuntimeParams[k], v)
			}
		}
		if got, want := cfg.RuntimeParams["replication"], map[bool]string{true: "database"}[repl]; got != want {
			t.Errorf("parseConfig(replication %v): replication = %q, want %q", repl, got, want)
		}
	}
}

// pgx's own keywords (statement_cache_capacity, description_cache_capacity,
// default_query_exec_mode) configure the client: they never reach the
// server as settings, which refuses them (SQLSTATE 42704), on the SQL
// connection (where pgx takes them) nor on the replication connection.
func TestPgxKeywordsNotSent(t *testing.T) {
	url := "postgres://app:" + secret + "@db.example/shop?statement_cache_capacity=0&description_cache_capacity=0&default_query_exec_mode=simple_protocol"
	cfg, err := sqlConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultQueryExecMode != pgx.QueryExecModeSimpleProtocol || cfg.StatementCacheCapacity != 0 {
		t.Errorf("sqlConfig: exec mode %v, statement cache %d; want simple_protocol and 0 from the URL", cfg.DefaultQueryExecMode, cfg.StatementCacheCapacity)
	}
	repl, err := parseConfig(url, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pgxParams {
		if v, ok := cfg.RuntimeParams[k]; ok {
			t.Errorf("the SQL connection sends %s=%s to the server", k, v)
		}
		if v, ok := repl.RuntimeParams[k]; ok {
			t.Errorf("the replication connection sends %s=%s to the server", k, v)
		}
	}
	if _, err := sqlConfig("postgres://app:" + secret + "@db.example/shop?default_query_exec_mode=fast"); err == nil || !strings.Contains(err.Error(), "default_query_exec_mode") || strings.Contains(err.Error(), secret) {
		t.Errorf("a bad default_query_exec_mode: %v, want an error naming it, without the password", err)
	}
}

// libpq's keywords that pgx does not implement: the harmless ones are
// dropped (gssencmode disable or prefer, fallback_application_name), the
// others refused naming the keyword, before the server refuses them as
// unknown settings.
func TestLibpqOnlyKeywords(t *testing.T) {
	base := "postgres://app:" + secret + "@db.example/shop?"
	for _, q := range []string{"gssencmode=disable", "gssencmode=prefer", "fallback_application_name=psql"} {
		for _, repl := range []bool{false, true} {
			cfg, err := parseConfig(base+q, repl)
			if err != nil {
				t.Errorf("parseConfig(%s, replication %v): %v, want it accepted", q, repl, err)
				continue
			}
			k, _, _ := strings.Cut(q, "=")
			if v, ok := cfg.RuntimeParams[k]; ok {
				t.Errorf("parseConfig(%s): sends %s=%s to the server", q, k, v)
			}
		}
		if _, err := sqlConfig(base + q); err != nil {
			t.Errorf("sqlConfig(%s): %v, want it accepted", q, err)
		}
	}
	for _, tc := range []struct{ q, want string }{
		{"gssencmode=require", "gssencmode=require: GSSAPI encryption"},
		{"sslcrl=/etc/crl.pem", "sslcrl is a libpq keyword"},
		{"hostaddr=10.0.0.1", "hostaddr is a libpq keyword"},
		{"load_balance_hosts=random", "load_balance_hosts is a libpq keyword"},
	} {
		_, err := parseConfig(base+tc.q, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("parseConfig(%s) = %v, want an error saying %q, without the password", tc.q, err, tc.want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, conn, want string }{
		{"ambiguous URL", "postgres://app:a@b" + secret + "@db/shop", "percent-encode @"},
		{"open quote", "host=db password='" + secret, "close the quotes"},
		{"bad port", "postgres://app:" + secret + "@db:notaport/shop", "is not a valid PostgreSQL connection string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.conn, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseConfig(%s) = %v, want an error saying %q", tc.name, err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("parseConfig(%s): the error shows the password: %v", tc.name, err)
			}
		})
	}
}

// A failed connection says what failed and never shows the password, even
// when the server's message or the driver's error repeats the string.
func TestConnectError(t *testing.T) {
	conn := "postgres://app:" + secret + "@db.example/shop"
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"bad password", &pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "app"`},
			[]string{"authentication failed", "check the password and pg_hba.conf", "db.example"}},
		{"no database", &pgconn.PgError{Code: "3D000", Message: `database "shop" does not exist`},
			[]string{`database "shop" does not exist`}},
		{"other server error", &pgconn.PgError{Code: "53300", Message: "too many connections"},
			[]string{"too many connections (SQLSTATE 53300)"}},
		{"driver error repeating the string", errors.New("dial " + conn + ": connection refused"),
			[]string{"connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := connectError(conn, tc.err).Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("connectError = %q, want it to say %q", got, w)
				}
			}
			if strings.Contains(got, secret) {
				t.Errorf("connectError = %q: shows the password", got)
			}
		})
	}
}

func TestLagBytes(t *testing.T) {
	for _, tc := range []struct {
		confirmed, current decode.LSN
		want               int64
	}{
		{0x1000, 0x1800, 0x800},
		{0x1000, 0x1000, 0},
		{0x2000, 0x1000, 0}, // confirmed ahead of a stale current: no lag, not a negative one
	} {
		if got := (SlotInfo{ConfirmedFlush: tc.confirmed, CurrentWAL: tc.current}).LagBytes(); got != tc.want {
			t.Errorf("LagBytes(confirmed %s, current %s) = %d, want %d", tc.confirmed, tc.current, got, tc.want)
		}
	}
}

// The lease's key is a function of the slot name alone: every bridge
// process computes the same one for the same slot.
func TestLeaseKey(t *testing.T) {
	if got, want := leaseKey("pg2iceberg_shop_pub"), uint32(0xbf4a9834); got != want {
		t.Errorf("leaseKey(pg2iceberg_shop_pub) = %#x, want %#x (FNV-1a, the key released bridges take)", got, want)
	}
	if leaseKey("pg2iceberg_a") == leaseKey("pg2iceberg_b") {
		t.Error("leaseKey is the same for two slots")
	}
}

func TestWaitFree(t *testing.T) {
	ctx := context.Background()
	taken := func(pid int32) error { return &InUseError{Slot: "s", What: "is in use", PID: pid} }
	// Free at once, or after an unknown holder (-1) and a holder that leaves.
	calls := 0
	holders := []int32{-1, 4242, 0}
	err := waitFree(ctx, func() (int32, error) { calls++; return holders[calls-1], nil }, taken)
	if err != nil || calls != 3 {
		t.Errorf("waitFree with a holder that leaves = %v after %d calls, want nil after 3", err, calls)
	}
	// A lookup error ends the wait with it.
	boom := errors.New("boom")
	if err := waitFree(ctx, func() (int32, error) { return 0, boom }, taken); !errors.Is(err, boom) {
		t.Errorf("waitFree with a failing lookup = %v, want %v", err, boom)
	}
	// A cancelled context ends the wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := waitFree(cctx, func() (int32, error) { return 4242, nil }, taken); !errors.Is(err, context.Canceled) {
		t.Errorf("waitFree cancelled = %v, want context.Canceled", err)
	}
	// A holder that stays is named once leaseWait has passed.
	began := time.Now()
	err = waitFree(ctx, func() (int32, error) { return 4242, nil }, taken)
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.PID != 4242 {
		t.Errorf("waitFree with a holder that stays = %v, want an *InUseError for pid 4242", err)
	}
	if waited := time.Since(began); waited < leaseWait {
		t.Errorf("waitFree gave up after %v, want at least %v", waited, leaseWait)
	}
}

func TestInUseError(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		err  InUseError
		want string
	}{
		{InUseError{Slot: "pg2iceberg_p", What: "is in use by another pg2iceberg", PID: 77},
			`slot "pg2iceberg_p" is in use by another pg2iceberg (two writers would commit every change twice): server pid 77; stop it first, or if it no longer runs end its session: SELECT pg_terminate_backend(77);`},
		{InUseError{Slot: "s", What: "is streamed", PID: 9, Application: "pg_recvlogical", Client: "10.0.0.7", Since: since},
			`slot "s" is streamed (two writers would commit every change twice): server pid 9, application_name "pg_recvlogical", client 10.0.0.7, connected since 2026-03-01T11:30:00Z; stop it first, or if it no longer runs end its session: SELECT pg_terminate_backend(9);`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("InUseError.Error() =\n  %s\nwant\n  %s", got, tc.want)
		}
	}
}

func TestStartError(t *testing.T) {
	busy := startError("pg2iceberg_p", &pgconn.PgError{Code: "55006", Message: `replication slot "pg2iceberg_p" is active for PID 12`})
	if s := busy.Error(); !strings.Contains(s, "another process streams it") || !strings.Contains(s, "--slot") || !strings.Contains(s, "is active for PID 12") {
		t.Errorf("startError(55006) = %q, want it to name the other process and --slot", s)
	}
	other := &pgconn.PgError{Code: "58P01", Message: "could not open file"}
	if err := startError("s", other); !errors.Is(err, other) || strings.Contains(err.Error(), "another process") {
		t.Errorf("startError(58P01) = %v, want it wrapped, with no talk of another process", err)
	}
}

func TestCopyable(t *testing.T) {
	keyed := &decode.Relation{Schema: "public", Name: "t", Columns: []decode.Column{{Name: "id", Key: true}, {Name: "v"}}}
	whole := &decode.Relation{Schema: "public", Name: "t", WholeRow: true, Columns: []decode.Column{{Name: "v"}}}
	keyless := &decode.Relation{Schema: "My Schema", Name: "logs", Columns: []decode.Column{{Name: "v"}}}
	if err := Copyable(keyed); err != nil {
		t.Errorf("Copyable(keyed) = %v, want nil", err)
	}
	if err := Copyable(whole); err != nil {
		t.Errorf("Copyable(whole row) = %v, want nil", err)
	}
	err := Copyable(keyless)
	if err == nil || !strings.Contains(err.Error(), `ALTER TABLE "My Schema"."logs" REPLICA IDENTITY FULL`) {
		t.Errorf("Copyable(keyless) = %v, want the ALTER TABLE that fixes it, quoted", err)
	}
}

func TestAddedLaterHint(t *testing.T) {
	var rels []*decode.Relation
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		rels = append(rels, &decode.Relation{Schema: "s", Name: n})
	}
	if got, want := addedLaterHint(rels[:2]), " (its tables: s.a, s.b); if the table is added later, say so with added_later: true"; got != want {
		t.Errorf("addedLaterHint(2 tables) = %q, want %q", got, want)
	}
	if got := addedLaterHint(rels); !strings.Contains(got, "s.j, and 2 more)") || strings.Contains(got, "s.k") {
		t.Errorf("addedLaterHint(12 tables) = %q, want the first ten and \"and 2 more\"", got)
	}
}

func TestKeyList(t *testing.T) {
	rel := &decode.Relation{Columns: []decode.Column{{Name: "id"}, {Name: "Tenant"}, {Name: "v"}}}
	if got, want := keyList(rel, []bool{true, true, false}), `"id", "Tenant"`; got != want {
		t.Errorf("keyList = %s, want %s", got, want)
	}
	if anyTrue([]bool{false, false}) || !anyTrue([]bool{false, true}) {
		t.Error("anyTrue is wrong")
	}
}
