package replication

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// SourceConfig says which source a Source reads.
type SourceConfig struct {
	// URL is the connection string.
	URL string
	// Slot keys the lease (see Lease).
	Slot string
	// Publication is the one streamed.
	Publication string
	// Overrides are the configuration's rules (may be nil), attached to
	// the columns described.
	Overrides *mapping.Overrides
}

// Source is the bridge's SQL session on the source database. It holds the
// lease (see Lease), and answers what the bridge, the stream and the sink
// ask of the source's catalog while streaming: a new table's description,
// an added column's type (it is an iceberg.ColumnDescriber), the DDL
// capture's key (a DDLKeys). Reopen replaces a connection the server
// dropped and takes the lease again. Used from one goroutine.
type Source struct {
	cfg  SourceConfig
	conn *pgx.Conn // replaced by Reopen
}

// OpenSource connects to the source.
func OpenSource(ctx context.Context, cfg SourceConfig) (*Source, error) {
	conn, err := Connect(ctx, cfg.URL)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, conn: conn}, nil
}

// Conn is the current connection; Reopen may replace it, so it is not kept.
func (s *Source) Conn() *pgx.Conn { return s.conn }

// Close closes the current connection, which ends the lease.
func (s *Source) Close() { _ = s.conn.Close(context.Background()) }

// Lease takes the lease on the slot (see Lease).
func (s *Source) Lease(ctx context.Context) error { return Lease(ctx, s.conn, s.cfg.Slot) }

// Reopen checks the connection after the replication connection was lost:
// a server restart drops this one too, and then a new one is opened and
// takes the lease again (see Relock), an error if another bridge took it
// meanwhile.
func (s *Source) Reopen(ctx context.Context, log *slog.Logger) error {
	// Bounded: on a half-open connection a ping's answer never comes.
	pctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	err := s.conn.Ping(pctx)
	cancel()
	if err == nil {
		return nil
	}
	log.Warn("SQL connection lost too; reopening it", "error", err)
	_ = s.conn.Close(context.Background())
	conn, err := Connect(ctx, s.cfg.URL)
	if err != nil {
		// The server may not be back yet: the caller tries again.
		return &ConnError{Op: "reopen the SQL connection", Err: err}
	}
	s.conn = conn
	return Relock(ctx, conn, s.cfg.Slot)
}

// DescribeColumn describes a column a relation message announced while
// streaming (added or retyped since preflight): its type as preflight
// describes it (array dimensions from the catalog while the column still
// has that type), its format_type name, and the configuration's rule for
// it.
func (s *Source) DescribeColumn(ctx context.Context, rel *decode.Relation, c *decode.Column) error {
	var ndims int
	var name string
	if err := s.conn.QueryRow(ctx, `SELECT coalesce((SELECT attndims FROM pg_attribute WHERE attrelid = $1 AND attname = $2
			AND atttypid = $3 AND NOT attisdropped), 0), format_type($3, $4)`,
		rel.ID, c.Name, c.TypeOID, c.TypeMod).Scan(&ndims, &name); err != nil {
		return fmt.Errorf("describe column %s.%s (type OID %d): %w", rel.QualifiedName(), c.Name, c.TypeOID, err)
	}
	t, err := DescribeType(ctx, s.conn, c.TypeOID, c.TypeMod, ndims)
	if err != nil {
		return fmt.Errorf("describe column %s.%s (type %s): %w", rel.QualifiedName(), c.Name, name, err)
	}
	c.Type, c.TypeName, c.Rule = t, name, s.cfg.Overrides.Match(rel.QualifiedName(), c.Name, name)
	return nil
}

// LookupTable returns a published table's description, checked as
// Preflight checks each table (see LookupTable): ErrNotPublished when it
// is not in the publication now, an *UnmirrorableError when it cannot be
// mirrored as it is.
func (s *Source) LookupTable(ctx context.Context, relID uint32) (*decode.Relation, error) {
	return LookupTable(ctx, s.conn, s.cfg.Publication, relID, s.cfg.Overrides)
}

// WaitVisible returns once transaction xid is visible to this session
// (see WaitVisible), calling keepalive while it waits.
func (s *Source) WaitVisible(ctx context.Context, xid uint32, keepalive func() error, log *slog.Logger) error {
	return WaitVisible(ctx, s.conn, xid, keepalive, log)
}

// LoadDDLKey reads the key DDL events are signed with (see LoadDDLKey).
func (s *Source) LoadDDLKey(ctx context.Context) ([]byte, error) { return LoadDDLKey(ctx, s.conn) }

// AttNums returns a table's live columns by attnum (see AttNums).
func (s *Source) AttNums(ctx context.Context, relID uint32) (map[int]string, error) {
	return AttNums(ctx, s.conn, relID)
}

// HasDefaults reports whether any of a table's columns cols has a default
// (or a value ADD COLUMN ... DEFAULT stored for the rows it found): their
// existing rows hold values no change event carries.
func (s *Source) HasDefaults(ctx context.Context, relID uint32, cols []string) (bool, error) {
	var withDefault int
	if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1 AND attname = ANY($2)
		AND NOT attisdropped AND (atthasmissing OR atthasdef)`, relID, cols).Scan(&withDefault); err != nil {
		return false, fmt.Errorf("check defaults of added columns: %w", err)
	}
	return withDefault > 0, nil
}
