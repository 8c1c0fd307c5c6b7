package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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
	if !connstr.Readable(connURL) {
		return nil, errors.New("source: the connection string does not parse unambiguously: percent-encode @, / and : in a URL's password (%40, %2F, %3A), or close the quotes of a keyword/value string")
	}
	cfg, err := pgconn.ParseConfig(connURL)
	if err != nil {
		// pgconn's parse errors can echo the string; say only what is wrong.
		return nil, fmt.Errorf("source %s is not a valid PostgreSQL connection string (postgres://user@host:5432/db, or host=... dbname=...)", connstr.Redact(connURL))
	}
	if cfg.ConnectTimeout == 0 {
		// libpq waits forever by default; a connection attempt into a
		// dead path (a half-open network) would hang a reconnect.
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	tcp, err := tcpFromParams(cfg.RuntimeParams)
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = tcp.dialer().DialContext
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	if replication {
		cfg.RuntimeParams["replication"] = "database"
	}
	return cfg, nil
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
	pc, err := parseConfig(connURL, false)
	if err != nil {
		return nil, err
	}
	if readBuffer > 0 {
		pc.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
			return pgproto3.NewFrontend(bufio.NewReaderSize(r, readBuffer), w)
		}
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		return nil, fmt.Errorf("source %s is not a valid PostgreSQL connection string", connstr.Redact(connURL))
	}
	cfg.Config = *pc
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
