package replication

import (
	"context"
	"errors"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// ErrNotPublished is a table that the stream has changes for but that is
// not in the publication now: it was dropped, or removed from the
// publication, after the changes were made.
var ErrNotPublished = errors.New("not in the publication now (dropped, or removed from it)")

// newTable handles a relation message for a table the sink does not know:
// OnNewTable copies it; a table that is gone or no longer published (it
// cannot be copied, and the changes alone would make a mirror without the
// rows that came before them) is skipped, and so is one that cannot be
// mirrored as it is (no GRANT, a type without an Iceberg form, a key that
// is not a single value, a name taken): that one needs a human, and is
// looked up again at its next relation message (pgoutput sends one after
// the table's definition or privileges change) and at the next start. Its
// skipped changes are lost to it, so once it can be mirrored it is copied
// (a table sync), never streamed into from the middle. It reports whether
// the table's messages are skipped.
func (s *stream) newTable(ctx context.Context, rel *decode.Relation) (bool, error) {
	if s.sink.Has(rel.ID) {
		return false, nil
	}
	if rel.Schema == CaptureSchema {
		s.skipped[rel.ID] = ""
		s.log.Debug("the DDL capture's own table is not mirrored", "table", rel.QualifiedName())
		return true, nil
	}
	if s.cfg.OnNewTable == nil {
		return false, nil
	}
	if err := s.visible(ctx); err != nil {
		return false, err
	}
	err := s.cfg.OnNewTable(ctx, rel, func() error { return s.sendStatus(ctx) })
	if errors.Is(err, ErrNotPublished) {
		s.skipped[rel.ID] = rel.QualifiedName()
		s.log.Warn("table gone or no longer published: its changes are skipped", "table", rel.QualifiedName(),
			"relid", rel.ID, "xid", s.txXID, "commit_lsn", s.txCommitLSN)
		return true, nil
	}
	if unmirrorable(err) {
		s.skipped[rel.ID] = rel.QualifiedName()
		s.progress.NeedsHuman(rel.ID, rel.QualifiedName(), err.Error())
		s.log.Warn("table cannot be mirrored: its changes are skipped until it is fixed", "table", rel.QualifiedName(),
			"relid", rel.ID, "xid", s.txXID, "commit_lsn", s.txCommitLSN, "problem", err)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	delete(s.skipped, rel.ID)
	s.progress.Resolved(rel.ID)
	return false, nil
}

// skip reports whether relID's changes are skipped, and counts one (not
// for the DDL capture's own table, named "").
func (s *stream) skip(relID uint32) bool {
	name, ok := s.skipped[relID]
	if !ok {
		return false
	}
	if name != "" {
		s.progress.skipped.Add(1)
	}
	return true
}
