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
//
// rel is the table as the copy reads it: the mirror's writers are bound to
// its columns, so copied values land in their columns even when the table
// changed since the last relation message.
func (s *Sink) BeginCopy(rel *decode.Relation) error {
	st, ok := s.tables[rel.ID]
	if !ok || st.mirror == nil {
		return nil
	}
	st.mirror.rel = rel
	if err := st.mirror.bind(); err != nil {
		return err
	}
	if st.mirror.index.len() == 0 {
		return nil
	}
	s.log.Warn("mirror already holds rows: the new copy replaces them", "table", st.mirror.name(), "rows", st.mirror.index.len())
	st.mirror.truncate()
	return nil
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

// CopyWriter writes rows of a table's copy into a Parquet file of its own.
// Several CopyWriters of one table may run in parallel goroutines; each is
// used by one goroutine. FinishCopy adds their files and keys to the mirror.
type CopyWriter struct {
	m      *mirror // read only while copying
	fw     *fileWriter
	keys   []string // key of the row at each position of fw
	keyBuf []byte
}

// NewCopyWriter returns a writer for a worker copying rows of relID, or nil
// when the table has no mirror (changelog only: nothing to copy).
func (s *Sink) NewCopyWriter(relID uint32) (*CopyWriter, error) {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil, nil
	}
	w := &CopyWriter{m: st.mirror}
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	s.copying[relID] = append(s.copying[relID], w)
	return w, nil
}

// Row writes one copied row.
func (w *CopyWriter) Row(row decode.Tuple) error {
	if w == nil {
		return nil
	}
	k, b, err := w.m.keyInto(w.keyBuf, row)
	w.keyBuf = b
	if err != nil {
		return err
	}
	if w.fw == nil {
		if w.fw, err = w.m.newDataFile(); err != nil {
			return err
		}
	}
	if err := w.m.appendRow(w.fw, row); err != nil {
		return err
	}
	w.keys = append(w.keys, k)
	return w.fw.rowDone()
}

// FinishCopy commits a table's copied rows with the watermark lsn and marks
// the copy complete. Until the mark is set the copy counts as not done.
func (s *Sink) FinishCopy(ctx context.Context, relID uint32, lsn decode.LSN) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	m := st.mirror
	s.copyMu.Lock()
	writers := s.copying[relID]
	delete(s.copying, relID)
	s.copyMu.Unlock()
	for _, w := range writers {
		if w.fw == nil {
			continue
		}
		df, err := w.fw.close()
		if err != nil {
			return err
		}
		id := int32(len(m.files))
		m.files = append(m.files, w.fw.path)
		m.closed = append(m.closed, df)
		for pos, k := range w.keys {
			if _, dup := m.index.get(k); dup {
				return fmt.Errorf("%s: key %q copied twice", m.name(), k)
			}
			m.index.set(k, loc{file: id, pos: int64(pos)})
		}
		m.changes += len(w.keys)
	}
	m.lastEnd = lsn
	if err := m.flush(ctx, s); err != nil {
		return err
	}
	_, recopy := m.tbl.Properties()[PropCopyLSN]
	txn := m.tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{PropCopyLSN: strconv.FormatUint(uint64(lsn), 10)}); err != nil {
		return fmt.Errorf("mark copy of %s complete: %w", m.name(), err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		return fmt.Errorf("mark copy of %s complete: %w", m.name(), err)
	}
	if err := m.committedTo(tbl); err != nil {
		return err
	}
	crashPoint("copy-done")
	if m.watermark < lsn {
		m.watermark = lsn
	}
	if c := st.changelog; c != nil && c.watermark < lsn && !recopy {
		// A new table: its stream starts after lsn. A table copied again
		// (resync) keeps recording every change in its changelog.
		c.watermark = lsn
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
