package replication

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

type retryable struct{}

func (retryable) Error() string   { return "retry me" }
func (retryable) Retryable() bool { return true }

func TestConnLost(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("flush: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"walsender terminated", &pgconn.PgError{Code: "57P01"}, true},
		{"connection failure", wrap(&pgconn.PgError{Code: "08006"}), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"EOF", wrap(io.ErrUnexpectedEOF), true},
		{"reset", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), true},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"read deadline", wrap(os.ErrDeadlineExceeded), true},
		{"closed", pgconn.ErrConnClosed, true},
		{"timed out", wrap(syscall.ETIMEDOUT), true},
		{"retryable", wrap(retryable{}), true},
		// A file's error is not the connection's: syscall.Errno has
		// Timeout and Temporary, so it passes for a net.Error.
		{"missing data file", wrap(&fs.PathError{Op: "open", Path: "/wh/x.parquet", Err: syscall.ENOENT}), false},
		{"disk full", wrap(&fs.PathError{Op: "write", Path: "/spool/x", Err: syscall.ENOSPC}), false},
		{"permission", wrap(&fs.PathError{Op: "open", Path: "/wh/x", Err: syscall.EACCES}), false},
		{"plain", errors.New("bad row"), false},
	} {
		if got := ConnLost(c.err); got != c.want {
			t.Errorf("%s: ConnLost(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
