package replication

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnLost reports whether err is a lost connection to the source (the
// replication connection, the SQL session or a copy's): a walsender or
// backend terminated (SQLSTATE class 57: pg_terminate_backend, a shutdown
// or restart), a connection failure (class 08), a reset, closed or timed
// out socket, the server ending the stream. Such an error is survived in
// the process by resuming from what is durable; any other is not.
func ConnLost(err error) bool {
	if err == nil {
		return false
	}
	var retry interface{ Retryable() bool }
	if errors.As(err, &retry) && retry.Retryable() {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	for _, errno := range lostErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	// A socket's error, not a file's: a bare syscall.Errno (ENOENT,
	// ENOSPC) has Timeout and Temporary too, so net.Error would take a
	// missing data file or a full disk for a lost connection.
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var connectErr *pgconn.ConnectError
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &connectErr)
}

// lostErrnos are the socket errors of a connection that is gone.
var lostErrnos = []error{
	syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
}
