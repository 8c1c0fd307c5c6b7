package replication

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// DDL events are authenticated (see SetupSQL): pg_logical_emit_message is
// executable by every role, so a message with the DDL prefix proves
// nothing. An event counts only when it carries an HMAC-SHA-256 of its
// body, made with the key in pg2iceberg.secret for the transaction it
// arrives in. Anything else is ignored, logged and counted, and never
// stops the stream.

var (
	// errUnsigned: the event has no signature (an older trigger, or a
	// message not sent by the trigger).
	errUnsigned = errors.New("not signed: not sent by the DDL capture's trigger, or by one installed by an older pg2iceberg (run pg2iceberg setup again)")
	// errBadSignature: the signature is not the trigger's for this
	// transaction.
	errBadSignature = errors.New("signature does not match: not signed by the DDL capture's trigger in this transaction")
)

// notInstalled is the problem LoadDDLKey reports without any capture.
const notInstalled = "the DDL capture is not installed"

// LoadDDLKey reads the key DDL events are signed with. When it cannot, the
// error is a PreflightError saying what to run.
func LoadDDLKey(ctx context.Context, conn *pgx.Conn) ([]byte, error) {
	var user string
	var table, trigger, canRead bool
	err := conn.QueryRow(ctx, `SELECT current_user,
		  EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pg2iceberg' AND c.relname = 'secret'),
		  EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname IN ('pg2iceberg_ddl', 'pg2iceberg_drop')),
		  COALESCE((SELECT has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
		            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pg2iceberg' AND c.relname = 'secret'), false)`).
		Scan(&user, &table, &trigger, &canRead)
	if err != nil {
		return nil, fmt.Errorf("look up the DDL capture's key: %w", err)
	}
	switch {
	case !table && !trigger:
		return nil, &PreflightError{Problem: notInstalled, Fix: "pg2iceberg setup --source <a superuser's URL> --grant-to " + user}
	case !table:
		return nil, &PreflightError{Problem: "the DDL capture was installed by an older pg2iceberg, whose events are not signed", Fix: "pg2iceberg setup --source <a superuser's URL> --grant-to " + user}
	case !canRead:
		return nil, &PreflightError{Problem: fmt.Sprintf("role %s may not read the DDL capture's key", user), Fix: "pg2iceberg setup --source <a superuser's URL> --grant-to " + user + ", or as a superuser: " + GrantSQL(user)}
	}
	var key []byte
	if err := conn.QueryRow(ctx, `SELECT key FROM pg2iceberg.secret`).Scan(&key); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, &PreflightError{Problem: "pg2iceberg.secret holds no key", Fix: "pg2iceberg setup --source <a superuser's URL>"}
		}
		return nil, fmt.Errorf("read the DDL capture's key: %w", err)
	}
	return key, nil
}

// signedInput is what the trigger signs: the prefix, the top-level
// transaction id and the body, so that a signed event counts in its own
// transaction only.
func signedInput(xid uint32, body []byte) []byte {
	b := make([]byte, 0, len(DDLPrefix)+12+len(body))
	b = append(b, DDLPrefix...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(xid), 10)
	b = append(b, '\n')
	return append(b, body...)
}

// signDDL returns content as the trigger emits it (for tests).
func signDDL(key []byte, xid uint32, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(signedInput(xid, body))
	out := append([]byte("sig:"), hex.EncodeToString(mac.Sum(nil))...)
	return append(append(out, '\n'), body...)
}

// splitSigned returns a signed event's signature and body.
func splitSigned(content []byte) (sig, body []byte, err error) {
	rest, ok := bytes.CutPrefix(content, []byte("sig:"))
	if !ok || len(rest) < 2*sha256.Size+1 || rest[2*sha256.Size] != '\n' {
		return nil, nil, errUnsigned
	}
	sig = make([]byte, sha256.Size)
	if _, err := hex.Decode(sig, rest[:2*sha256.Size]); err != nil {
		return nil, nil, errUnsigned
	}
	return sig, rest[2*sha256.Size+1:], nil
}

// verifyDDL checks a DDL event's signature for transaction xid and returns
// its body.
func verifyDDL(key []byte, xid uint32, content []byte) ([]byte, error) {
	sig, body, err := splitSigned(content)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(signedInput(xid, body))
	if !hmac.Equal(mac.Sum(nil), sig) {
		return nil, errBadSignature
	}
	return body, nil
}

// ddlAuth is the stream's view of the DDL capture's key.
type ddlAuth struct {
	load    func(ctx context.Context) ([]byte, error) // nil: no capture, every event is ignored
	key     []byte                                    // nil until read
	problem error                                     // why key is nil
	// reloaded: the key was read again in the open transaction. A failed
	// verification reads it again (setup may have run since), once per
	// transaction: forged messages cost one query per transaction
	// (commit) of the forger, not one per message.
	reloaded bool
}

// reload reads the key again, once per transaction unless force. A
// problem of the capture (a PreflightError) is kept in a.problem; any
// other error (the SQL connection) is returned.
func (a *ddlAuth) reload(ctx context.Context, force bool) error {
	if a.load == nil {
		a.problem = errors.New("the stream has no way to read the DDL capture's key")
		return nil
	}
	if a.reloaded && !force {
		return nil
	}
	a.reloaded = true
	key, err := a.load(ctx)
	var pe *PreflightError
	if errors.As(err, &pe) {
		a.key, a.problem = nil, err
		return nil
	}
	if err != nil {
		return err
	}
	a.key, a.problem = key, nil
	return nil
}

// verify returns the body of a DDL event of transaction xid, or why it
// does not count (ignored), or an error reading the key (which stops the
// stream rather than drop an event that may be genuine).
func (a *ddlAuth) verify(ctx context.Context, xid uint32, content []byte) (body []byte, ignored, err error) {
	if _, _, ignored := splitSigned(content); ignored != nil {
		return nil, ignored, nil
	}
	if a.key == nil {
		if err := a.reload(ctx, false); err != nil {
			return nil, nil, err
		}
		if a.key == nil {
			return nil, fmt.Errorf("no key to verify it with: %w", a.problem), nil
		}
	}
	body, ignored = verifyDDL(a.key, xid, content)
	if ignored != nil && !a.reloaded {
		// The capture may have been installed again with a new key.
		if err := a.reload(ctx, false); err != nil {
			return nil, nil, err
		}
		if a.key == nil {
			return nil, fmt.Errorf("no key to verify it with: %w", a.problem), nil
		}
		body, ignored = verifyDDL(a.key, xid, content)
	}
	return body, ignored, nil
}

// startDDLAuth reads the key when the stream starts and says, once, when
// DDL events will be ignored.
func (s *Stream) startDDLAuth(ctx context.Context) {
	err := s.auth.reload(ctx, true)
	s.auth.reloaded = false
	var pe *PreflightError
	switch {
	case err != nil:
		s.log.Warn("the DDL capture's key could not be read; the first DDL event tries again", "error", err)
	case s.auth.key != nil:
	case errors.As(s.auth.problem, &pe) && s.auth.load != nil && pe.Problem == notInstalled:
		s.log.Info("DDL capture not installed: DDL events are ignored", "fix", pe.Fix)
	default:
		s.log.Warn("DDL events are ignored until the DDL capture's key can be read", "reason", s.auth.problem)
	}
}

// ddl handles a logical message with the DDL prefix in the open
// transaction: an authenticated, well-formed event goes to the sink;
// anything else is logged (the first of a transaction), counted and
// ignored.
func (s *Stream) ddl(ctx context.Context, m *decode.LogicalMessage) error {
	body, ignored, err := s.auth.verify(ctx, s.txXID, m.Content)
	if err != nil {
		return fmt.Errorf("verify a DDL event: %w", err)
	}
	var ev *decode.DDLEvent
	if ignored == nil {
		ev, ignored = decode.ParseDDLEvent(body)
	}
	if ignored != nil {
		s.progress.ddlIgnored.Add(1)
		if !s.ddlWarned {
			s.ddlWarned = true
			s.log.Warn("DDL event ignored", "reason", ignored, "xid", s.txXID, "commit_lsn", s.txCommitLSN, "bytes", len(m.Content))
		}
		return nil
	}
	cols, err := s.sink.DDL(ctx, ev)
	if err != nil {
		return err
	}
	s.columnsAdded(ev.RelID, cols)
	return nil
}
