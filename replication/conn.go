package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pg2iceberg/pg2iceberg/connstr"
)

// sessionParams give every value one text form (see package mapping).
var sessionParams = map[string]string{
	"DateStyle":          "ISO, YMD",
	"TimeZone":           "UTC",
	"IntervalStyle":      "postgres",
	"extra_float_digits": "3",
	"bytea_output":       "hex",
	"application_name":   "pg2iceberg",
}

// SessionParams returns the settings that give every value the text form
// the bridge reads (all of sessionParams but application_name), for a
// consumer that must decode the same text, such as the bench's null
// consumer.
func SessionParams() map[string]string {
	p := maps.Clone(sessionParams)
	delete(p, "application_name")
	return p
}

func parseConfig(connURL string, replication bool) (*pgconn.Config, error) {
	if err := checkReadable(connURL); err != nil {
		return nil, err
	}
	cfg, err := pgconn.ParseConfig(connURL)
	if err != nil {
		return nil, invalidSource(connURL)
	}
	// pgx's own keywords set the SQL connection's client (see sqlConfig);
	// the server would refuse them as settings.
	for _, k := range pgxParams {
		delete(cfg.RuntimeParams, k)
	}
	return cfg, adjustConfig(cfg, replication)
}

// pgxParams are the keywords pgx takes from a connection string for
// itself (pgx.ParseConfig); pgconn leaves them among the settings it
// sends to the server.
var pgxParams = []string{"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode"}

// sqlConfig parses the source's connection string for a SQL connection:
// pgx takes its own keywords, the rest is as parseConfig's.
func sqlConfig(connURL string) (*pgx.ConnConfig, error) {
	if err := checkReadable(connURL); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		for _, k := range pgxParams {
			if strings.Contains(connURL, k+"=") {
				return nil, fmt.Errorf("%w; check the value of %s (see pgx's documentation)", invalidSource(connURL), k)
			}
		}
		return nil, invalidSource(connURL)
	}
	return cfg, adjustConfig(&cfg.Config, false)
}

func checkReadable(connURL string) error {
	if !connstr.Readable(connURL) {
		return errors.New("source: the connection string does not parse unambiguously: percent-encode @, / and : in a URL's password (%40, %2F, %3A), or close the quotes of a keyword/value string")
	}
	return nil
}

// invalidSource says a connection string does not parse; the parsers'
// own errors can echo the string, so it says only what is wrong.
func invalidSource(connURL string) error {
	return fmt.Errorf("source %s is not a valid PostgreSQL connection string (postgres://user@host:5432/db, or host=... dbname=...)", connstr.Redact(connURL))
}

// libpqOnly are libpq's keywords that pgx neither implements nor keeps
// out of the settings it sends to the server (which refuses them), with
// a hint where there is a way to get what the keyword asks.
var libpqOnly = map[string]string{
	"hostaddr":                 " (give the address as host)",
	"sslcrl":                   " (certificate revocation lists are not checked)",
	"sslcrldir":                " (certificate revocation lists are not checked)",
	"sslcompression":           "",
	"ssl_min_protocol_version": " (the driver accepts TLS 1.2 and newer)",
	"ssl_max_protocol_version": "",
	"requirepeer":              "",
	"gsslib":                   "",
	"gssdelegation":            "",
	"load_balance_hosts":       " (list the hosts in the order to try them)",
}

// dropLibpqOnly takes libpq's keywords that pgx does not implement out of
// params: gssencmode disable or prefer (pgx never encrypts with GSSAPI;
// prefer falls back as libpq does where GSSAPI is unavailable) and
// fallback_application_name (the bridge names itself) are dropped; the
// others are refused, naming the keyword.
func dropLibpqOnly(params map[string]string) error {
	switch v, ok := params["gssencmode"]; {
	case !ok:
	case v == "disable" || v == "prefer":
		delete(params, "gssencmode")
	default:
		return fmt.Errorf("source: gssencmode=%s: GSSAPI encryption is not supported by pg2iceberg's PostgreSQL driver; use sslmode=verify-full for an encrypted connection, or gssencmode=disable", v)
	}
	delete(params, "fallback_application_name")
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if hint, ok := libpqOnly[k]; ok {
			return fmt.Errorf("source: %s is a libpq keyword that pg2iceberg's PostgreSQL driver (pgx) does not implement%s; take it out of the connection string", k, hint)
		}
	}
	return nil
}

// adjustConfig sets what every connection of the bridge's has: a connect
// timeout, the TCP timeouts (from libpq's keywords, which it takes out of
// the settings), the session settings and, for a replication connection,
// replication=database.
func adjustConfig(cfg *pgconn.Config, replication bool) error {
	if cfg.ConnectTimeout == 0 {
		// libpq waits forever by default; a connection attempt into a
		// dead path (a half-open network) would hang a reconnect.
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	tcp, err := tcpFromParams(cfg.RuntimeParams)
	if err != nil {
		return err
	}
	if err := dropLibpqOnly(cfg.RuntimeParams); err != nil {
		return err
	}
	cfg.DialFunc = tcp.dialer().DialContext
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	if replication {
		cfg.RuntimeParams["replication"] = "database"
	}
	return nil
}

// DefaultConnectTimeout bounds a connection attempt whose connection
// string sets no connect_timeout.
const DefaultConnectTimeout = 30 * time.Second

// connectError explains a failed connection without leaking the password.
func connectError(connURL string, err error) error {
	return connstr.ScrubError(describeConnectError(connURL, err), connURL)
}

func describeConnectError(connURL string, err error) error {
	where := connstr.Redact(connURL)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000":
			return fmt.Errorf("connect to %s: authentication failed for the user (check the password and pg_hba.conf): %s", where, pgErr.Message)
		case "3D000":
			return fmt.Errorf("connect to %s: %s", where, pgErr.Message)
		}
		return fmt.Errorf("connect to %s: %s (SQLSTATE %s)", where, pgErr.Message, pgErr.Code)
	}
	return fmt.Errorf("connect to %s: %s", where, err)
}

// Connect opens a regular SQL connection with the bridge's session settings.
func Connect(ctx context.Context, connURL string) (*pgx.Conn, error) {
	return connect(ctx, connURL, 0)
}

// copyReadBuffer is the read buffer of a copy worker's connection. pgx
// reads 8 KiB at a time, so a COPY of hundreds of MB costs tens of
// thousands of reads; the server is ahead of a copy, so each read finds
// the socket full and a bigger buffer takes more at once (the 5M-row
// benchmark copy's read syscalls: 0.23 CPU s with 8 KiB, 0.06 with this).
const copyReadBuffer = 256 << 10

// connectCopy is Connect for a copy worker: reads are buffered in
// copyReadBuffer bytes.
func connectCopy(ctx context.Context, connURL string) (*pgx.Conn, error) {
	return connect(ctx, connURL, copyReadBuffer)
}

func connect(ctx context.Context, connURL string, readBuffer int) (*pgx.Conn, error) {
	cfg, err := sqlConfig(connURL)
	if err != nil {
		return nil, err
	}
	if readBuffer > 0 {
		cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
			return pgproto3.NewFrontend(bufio.NewReaderSize(r, readBuffer), w)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(connURL, err)
	}
	return conn, nil
}

// ConnectReplication opens a logical replication connection.
func ConnectReplication(ctx context.Context, connURL string) (*pgconn.PgConn, error) {
	cfg, err := parseConfig(connURL, true)
	if err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(connURL, err)
	}
	return conn, nil
}
