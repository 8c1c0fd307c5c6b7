package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// UnmirrorableError is a published table the bridge cannot mirror as it
// is: its role cannot read it, a column's type has no Iceberg form, its
// key is not a single value (see checkTable). Err holds each problem with
// the SQL that fixes it.
type UnmirrorableError struct {
	Table string
	Rel   *decode.Relation // nil when the table was not found
	Err   error
}

func (e *UnmirrorableError) Error() string {
	return fmt.Sprintf("table %s cannot be mirrored:\n%v", e.Table, e.Err)
}

func (e *UnmirrorableError) Unwrap() error { return e.Err }

// Unmirrorable marks the error as a table's own problem, which the stream
// answers by skipping that table (see unmirrorable).
func (e *UnmirrorableError) Unmirrorable() bool { return true }

// unmirrorable reports whether err says that one table cannot be mirrored
// as it is (an error with an Unmirrorable method that says so: this
// package's UnmirrorableError, the sink's name collisions), not that the
// bridge cannot go on.
func unmirrorable(err error) bool {
	var u interface{ Unmirrorable() bool }
	return errors.As(err, &u) && u.Unmirrorable()
}

// LookupTable returns a published table's description, checked as
// Preflight checks each table; only this table's problems count (an
// *UnmirrorableError), so one table a user created without a GRANT, or
// with a type that has no Iceberg form, never keeps the others from being
// copied. A table not in the publication now is ErrNotPublished.
func LookupTable(ctx context.Context, conn *pgx.Conn, publication string, relID uint32, overrides *mapping.Overrides) (*decode.Relation, error) {
	rels, err := publishedTables(ctx, conn, publication, relID)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("relation %d, publication %q: %w", relID, publication, ErrNotPublished)
	}
	var user string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		return nil, fmt.Errorf("read the current role: %w", err)
	}
	problems, err := checkTable(ctx, conn, publication, user, rels[0], overrides)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &UnmirrorableError{Table: rels[0].QualifiedName(), Rel: rels[0], Err: errors.Join(problems...)}
	}
	return rels[0], nil
}

// CheckTable returns why a published table cannot be mirrored (an
// *UnmirrorableError), nil if it can, for status: a table the stream
// skips has no Iceberg tables to show it by.
func CheckTable(ctx context.Context, conn *pgx.Conn, publication string, relID uint32, overrides *mapping.Overrides) error {
	_, err := LookupTable(ctx, conn, publication, relID, overrides)
	if errors.Is(err, ErrNotPublished) {
		return nil
	}
	return err
}

// Attention is a table that needs a human: the stream skips its changes
// until Problem is fixed.
type Attention struct {
	Table   string    `json:"table"`
	Problem string    `json:"problem"`
	Since   time.Time `json:"since"`
}

// attention is Progress's list of tables that need a human.
type attention struct {
	mu     sync.Mutex // guards tables
	tables map[uint32]Attention
}

// NeedsHuman records that table (relID) needs a human, and why.
func (p *Progress) NeedsHuman(relID uint32, table, problem string) {
	p.attn.mu.Lock()
	defer p.attn.mu.Unlock()
	if p.attn.tables == nil {
		p.attn.tables = map[uint32]Attention{}
	}
	since := time.Now()
	if a, ok := p.attn.tables[relID]; ok {
		since = a.Since
	}
	p.attn.tables[relID] = Attention{Table: table, Problem: problem, Since: since}
}

// Resolved removes relID from the tables that need a human.
func (p *Progress) Resolved(relID uint32) {
	p.attn.mu.Lock()
	defer p.attn.mu.Unlock()
	delete(p.attn.tables, relID)
}

// Attention returns the tables that need a human, by name.
func (p *Progress) Attention() []Attention {
	p.attn.mu.Lock()
	defer p.attn.mu.Unlock()
	out := make([]Attention, 0, len(p.attn.tables))
	for _, a := range p.attn.tables {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Attention) int { return strings.Compare(a.Table, b.Table) })
	return out
}

// attentionNote is what the health line adds for tables that need a human
// ("" when none do).
func (p *Progress) attentionNote() string {
	a := p.Attention()
	if len(a) == 0 {
		return ""
	}
	names := make([]string, len(a))
	for i, t := range a {
		names[i] = t.Table
	}
	return fmt.Sprintf("; %d table(s) need a human, their changes are skipped: %s (see /status)", len(a), strings.Join(names, ", "))
}
