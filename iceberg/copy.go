package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/catalog"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// PropCopyLSN is the mirror table property that marks its initial copy
// complete, at the slot's consistent point.
const PropCopyLSN = "pg2iceberg.copy-lsn"

// BeginCopy deletes whatever the mirror holds (a copy from an earlier slot)
// in the same commit as the new copy, so rows deleted at the source since
// do not survive.
func (s *Sink) BeginCopy(relID uint32) {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil || len(st.mirror.index) == 0 {
		return
	}
	s.log.Warn("mirror already holds rows: the new copy replaces them", "table", st.mirror.name(), "rows", len(st.mirror.index))
	st.mirror.truncate()
}

// CopyLSN returns the LSN a mirror's initial copy was taken at.
func (s *Sink) CopyLSN(relID uint32) (decode.LSN, bool) {
	st, ok := s.tables[relID]
	if !ok {
		return 0, false
	}
	return s.copyLSN(st)
}

func (s *Sink) copyLSN(st *sourceTable) (decode.LSN, bool) {
	if st.mirror == nil {
		return 0, false
	}
	v, ok := st.mirror.tbl.Properties()[PropCopyLSN]
	if !ok {
		return 0, false
	}
	lsn, err := parseLSNProp(v)
	return lsn, err == nil
}

// CopyRow writes one row of a table's initial copy to its mirror.
func (s *Sink) CopyRow(relID uint32, row decode.Tuple) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	m := st.mirror
	k, err := m.key(row)
	if err != nil {
		return err
	}
	m.changes++
	return m.insert(row, k)
}

// FinishCopy commits a table's copied rows with the watermark lsn and marks
// the copy complete. Until the mark is set the copy counts as not done.
func (s *Sink) FinishCopy(ctx context.Context, relID uint32, lsn decode.LSN) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	m := st.mirror
	m.lastEnd = lsn
	if err := m.flush(ctx, s); err != nil {
		return err
	}
	txn := m.tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{PropCopyLSN: strconv.FormatUint(uint64(lsn), 10)}); err != nil {
		return fmt.Errorf("mark copy of %s complete: %w", m.name(), err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		return fmt.Errorf("mark copy of %s complete: %w", m.name(), err)
	}
	m.tbl = tbl
	crashPoint("copy-done")
	if m.watermark < lsn {
		m.watermark = lsn
	}
	if st.changelog != nil && st.changelog.watermark < lsn {
		// The stream starts after lsn; nothing at or below it is a change.
		st.changelog.watermark = lsn
	}
	return nil
}

// CopyState says which mirrors have a complete initial copy.
func (s *Sink) CopyState() (done, notDone []*decode.Relation) {
	for _, st := range s.tables {
		if st.mirror == nil {
			continue
		}
		if _, ok := st.mirror.tbl.Properties()[PropCopyLSN]; ok {
			done = append(done, st.rel)
		} else {
			notDone = append(notDone, st.rel)
		}
	}
	return done, notDone
}

// DropTables drops the Iceberg tables of every source table added to the
// sink and forgets them: used to start an unfinished initial copy over.
func (s *Sink) DropTables(ctx context.Context) error {
	for id, st := range s.tables {
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil {
				continue
			}
			if err := s.cat.DropTable(ctx, t.ident); err != nil && !errors.Is(err, catalog.ErrNoSuchTable) {
				return fmt.Errorf("drop table %s: %w", t.name(), err)
			}
		}
		delete(s.tables, id)
	}
	return nil
}
