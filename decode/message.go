package decode

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
)

// LSN is a PostgreSQL WAL position.
type LSN = pglogrepl.LSN

// Kind says what a Datum holds.
type Kind uint8

// Datum kinds.
const (
	Null      Kind = iota // SQL NULL
	Unchanged             // unchanged TOAST value: the value exists but was not sent
	Text                  // text output form of the value
	Binary                // binary send form of the value
)

// Datum is one column value as the source sent it.
type Datum struct {
	Kind Kind
	Data []byte
}

// Tuple is a row image, one Datum per relation column, in column order.
type Tuple []Datum

// Column describes one column of a relation as pgoutput sent it.
type Column struct {
	Name    string
	TypeOID uint32
	TypeMod int32
	// Key is true when the column is part of the replica identity.
	Key bool
	// NotNull, TypeName and Type come from the catalog (preflight), not
	// from pgoutput; they are zero in relations the stream announces.
	NotNull  bool
	TypeName string
	// Type describes the column's type (element type of an array and its
	// declared dimensions, base type of a domain, attributes of a composite
	// type, owning extension) as mapping needs it.
	Type *Type
	// Rule is the configuration's rule for the column, if any (set by
	// replication from mapping.Overrides.Match).
	Rule *Rule
}

// Excluded reports whether a rule leaves the column out of Iceberg.
func (c Column) Excluded() bool { return c.Rule.Excluded() }

// Relation is the cached description of a published table.
type Relation struct {
	ID     uint32
	Schema string
	Name   string
	// ReplicaIdentity is 'd' (default: primary key), 'n' (nothing),
	// 'f' (full) or 'i' (index).
	ReplicaIdentity byte
	Columns         []Column
	// RowFilter is the publication's row filter (a SQL expression), from the
	// catalog; the initial copy applies it as pgoutput does to changes.
	RowFilter string
	// ColumnList: the publication publishes a column list of the table, so
	// a column added later is published only once the list names it.
	ColumnList bool
	// WholeRow, from the catalog: the mirror is kept by the whole row
	// (REPLICA IDENTITY FULL with no primary key, or a deferrable one, to
	// key it by). No column is Key; rows may repeat and hold NULLs.
	WholeRow bool
	// KeyNote, from the catalog: what limits the table's key, and what to
	// run about it ("" when nothing does). Logged as a warning at start.
	KeyNote string
}

// NewColumns are the columns schema evolution gave a table in one step:
// their existing rows may hold values no change event carries (an ADD
// COLUMN's default, a retyped column's converted values).
type NewColumns struct {
	Added   []string // added columns
	Retyped []string // columns retyped under the new-column policy
	// Dropped columns of a mirror kept by the whole row: every row's key
	// changed, so the mirror is copied again.
	Dropped []string
}

// QualifiedName is schema.name.
func (r *Relation) QualifiedName() string { return r.Schema + "." + r.Name }

// QuotedName is schema.name with both quoted, for SQL.
func (r *Relation) QuotedName() string { return QuoteIdent(r.Schema) + "." + QuoteIdent(r.Name) }

// HasKey reports whether the table has a key its mirror is kept by: key
// columns, or the whole row.
func (r *Relation) HasKey() bool { return r.WholeRow || len(r.KeyColumns()) > 0 }

// KeyColumns returns the indexes of the replica identity columns.
func (r *Relation) KeyColumns() []int {
	var keys []int
	for i, c := range r.Columns {
		if c.Key {
			keys = append(keys, i)
		}
	}
	return keys
}

// ColumnIndex returns the position of the named column, or -1.
func (r *Relation) ColumnIndex(name string) int {
	for i, c := range r.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Message is one decoded pgoutput message.
type Message interface{ message() }

// Op is the kind of a row change.
type Op byte

// Row change kinds, as written to the changelog's op column.
const (
	Insert   Op = 'I'
	Update   Op = 'U'
	Delete   Op = 'D'
	Truncate Op = 'T'
	// Resync is not a pgoutput operation: the changelog row that marks a
	// table copied again (pg2iceberg backfill --table).
	Resync Op = 'R'
)

func (o Op) String() string { return string(rune(o)) }

// Begin opens a transaction that is sent whole (not streamed).
type Begin struct {
	XID        uint32
	FinalLSN   LSN
	CommitTime time.Time
}

// Commit closes the transaction opened by Begin.
type Commit struct {
	CommitLSN  LSN
	EndLSN     LSN
	CommitTime time.Time
}

// StreamStart opens a segment of a streamed in-progress transaction.
type StreamStart struct {
	XID   uint32
	First bool
}

// StreamStop closes a segment of a streamed transaction.
type StreamStop struct{}

// StreamCommit commits a streamed transaction.
type StreamCommit struct {
	XID        uint32
	CommitLSN  LSN
	EndLSN     LSN
	CommitTime time.Time
}

// StreamAbort aborts a streamed transaction (SubXID == XID) or one of its
// subtransactions.
type StreamAbort struct {
	XID    uint32
	SubXID uint32
}

// RelationMessage announces a relation, or a new shape of one. Old is the
// previously cached shape, nil on first sight.
type RelationMessage struct {
	Rel *Relation
	Old *Relation
}

// Change is an INSERT, UPDATE or DELETE of one row.
//
// Before is the old row image when the source sent one: for UPDATE and
// DELETE, the replica identity key columns (BeforeIsKey) or, with REPLICA
// IDENTITY FULL, the whole row. Datums of columns the source did not send in
// a key-only image are Null. After is the new row image (INSERT, UPDATE); it
// may contain Unchanged datums for TOASTed columns the UPDATE did not touch.
type Change struct {
	Op          Op
	Rel         *Relation
	XID         uint32 // set inside streamed transactions (the subtransaction's XID)
	Before      Tuple
	BeforeIsKey bool
	After       Tuple
}

// TruncateMessage truncates one or more relations.
type TruncateMessage struct {
	XID     uint32
	Rels    []*Relation
	Cascade bool
}

// LogicalMessage is a message from pg_logical_emit_message.
type LogicalMessage struct {
	XID           uint32
	LSN           LSN
	Transactional bool
	Prefix        string
	Content       []byte
}

// TypeMessage describes a non-built-in type used by a published column.
type TypeMessage struct {
	OID       uint32
	Namespace string
	Name      string
}

// Origin names the replication origin of the transaction's changes.
type Origin struct{ Name string }

func (*Begin) message()           {}
func (*Commit) message()          {}
func (*StreamStart) message()     {}
func (*StreamStop) message()      {}
func (*StreamCommit) message()    {}
func (*StreamAbort) message()     {}
func (*RelationMessage) message() {}
func (*Change) message()          {}
func (*TruncateMessage) message() {}
func (*LogicalMessage) message()  {}
func (*TypeMessage) message()     {}
func (*Origin) message()          {}

// UnknownRelationError reports a change for a relation the decoder has not
// seen a Relation message for: the stream is not being read from the start
// of a session, or a message was lost.
type UnknownRelationError struct{ ID uint32 }

func (e *UnknownRelationError) Error() string {
	return fmt.Sprintf("change for relation %d arrived before its relation message", e.ID)
}

// QuoteIdent quotes a PostgreSQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
