package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// ErrNotPublished is a table that the stream has changes for but that is
// not in the publication now: it was dropped, or removed from the
// publication, after the changes were made.
var ErrNotPublished = errors.New("not in the publication now (dropped, or removed from it)")

// relation handles a relation message. A table the sink does not know is
// a NewTable event first (the DDL capture's own table is skipped); the
// caller copies it, or answers why it cannot (see newTableFailed).
func (s *Stream) relation(ctx context.Context, rel *decode.Relation) error {
	if s.sink.Has(rel.ID) {
		return s.applyRelation(ctx, rel)
	}
	if rel.Schema == CaptureSchema {
		s.skipped[rel.ID] = ""
		s.log.Debug("the DDL capture's own table is not mirrored", "table", rel.QualifiedName())
		return nil
	}
	s.emit(NewTable{Rel: rel, XID: s.txXID})
	s.after = func(ctx context.Context) error { return s.newTableHandled(ctx, rel) }
	return nil
}

// newTableHandled goes on after the caller handled a NewTable event: a
// table the sink has now is applied; one it still does not have is gone or
// no longer published (it cannot be copied, and the changes alone would
// make a mirror without the rows that came before them), and skipped.
func (s *Stream) newTableHandled(ctx context.Context, rel *decode.Relation) error {
	if !s.sink.Has(rel.ID) {
		s.skipped[rel.ID] = rel.QualifiedName()
		s.log.Warn("table gone or no longer published: its changes are skipped", "table", rel.QualifiedName(),
			"relid", rel.ID, "xid", s.txXID, "commit_lsn", s.txCommitLSN)
		return nil
	}
	delete(s.skipped, rel.ID)
	s.progress.Resolved(rel.ID)
	return s.applyRelation(ctx, rel)
}

// newTableFailed answers a NewTable event the caller could not handle
// (err, see Handled). A table that is gone or no longer published (it
// cannot be copied, and the changes alone would make a mirror without the
// rows that came before them) is skipped, and so is one that cannot be
// mirrored as it is (no GRANT, a type without an Iceberg form, a key that
// is not a single value, a name taken): that one needs a human, and is
// looked up again at its next relation message (pgoutput sends one after
// the table's definition or privileges change) and at the next start. Its
// skipped changes are lost to it, so once it can be mirrored it is copied
// (a table sync), never streamed into from the middle. Any other error
// ends the stream.
func (s *Stream) newTableFailed(rel *decode.Relation, err error) error {
	switch {
	case errors.Is(err, ErrNotPublished):
		s.log.Warn("table gone or no longer published: its changes are skipped", "table", rel.QualifiedName(),
			"relid", rel.ID, "xid", s.txXID, "commit_lsn", s.txCommitLSN)
	case unmirrorable(err):
		s.progress.NeedsHuman(rel.ID, rel.QualifiedName(), err.Error())
		s.log.Warn("table cannot be mirrored: its changes are skipped until it is fixed", "table", rel.QualifiedName(),
			"relid", rel.ID, "xid", s.txXID, "commit_lsn", s.txCommitLSN, "problem", err)
	default:
		return err
	}
	s.skipped[rel.ID] = rel.QualifiedName()
	s.after = nil // the relation message is not applied
	return nil
}

// keyGainedFailed answers a KeyGained event the caller could not handle
// (err, see Handled): a table that cannot be mirrored as it is keeps its
// changelog, and its mirror waits for the fix and the next start. Any
// other error ends the stream.
func (s *Stream) keyGainedFailed(relID uint32, err error) error {
	if !unmirrorable(err) {
		return err
	}
	var u *UnmirrorableError
	name := fmt.Sprint(relID)
	if errors.As(err, &u) {
		name = u.Table
	}
	s.progress.NeedsHuman(relID, name, err.Error())
	s.log.Warn("table gained a key but cannot be mirrored: it keeps its changelog only", "table", name, "relid", relID, "problem", err)
	return nil
}

// skip reports whether relID's changes are skipped, and counts one (not
// for the DDL capture's own table, named "").
func (s *Stream) skip(relID uint32) bool {
	name, ok := s.skipped[relID]
	if !ok {
		return false
	}
	if name != "" {
		s.progress.skipped.Add(1)
	}
	return true
}
