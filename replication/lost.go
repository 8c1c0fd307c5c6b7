package replication

import (
	"errors"
	"io"
	"net"
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
	var netErr net.Error
	return errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &netErr)
}
