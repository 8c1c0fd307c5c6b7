package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

// PropCopyLSN is the mirror table property that marks its initial copy
// complete, at the slot's consistent point.
const PropCopyLSN = "pg2iceberg.copy-lsn"

// PropCopyProgress is the snapshot summary property of each chunk commit
// of a first copy: JSON {"lsn": the LSN the copy was first taken at,
// "done": the heap page ranges [from, to) committed so far, to 0 meaning
// to the end of the table}. A restart reads it from the current snapshot
// to copy only the rest (see BeginCopy).
const PropCopyProgress = "pg2iceberg.copy-progress"

// PropChangelogFrom is the mirror table property a resumed copy sets: the
// changelog records changes from this LSN on (see FinishCopy).
const PropChangelogFrom = "pg2iceberg.changelog-from"

// copyFileTarget is the size at which a copy worker starts a new data file.
// A file also ends when its keys reach copyKeysTarget bytes, so that their
// offsets fit 32 bits (a key, like any value, is less than 1 GiB).
const (
	copyFileTarget = 256 << 20
	copyKeysTarget = 2 << 30
)

// copyProgress is PropCopyProgress.
type copyProgress struct {
	LSN  decode.LSN `json:"lsn"`
	Done [][2]int64 `json:"done"`
}

// copyRun is the state of one table's copy in progress.
type copyRun struct {
	// chunked: a first copy, committed chunk by chunk so that a restart
	// continues it. A copy that replaces a complete mirror (resync) is
	// committed in one snapshot instead.
	chunked bool
	// upsert: the copy continues chunks an earlier run committed from
	// another snapshot; a copied row replaces a live row of the same key
	// (the row moved between chunks since).
	upsert   bool
	progress copyProgress
	mu       sync.Mutex // serialises chunk commits
}

// CopyResume is what BeginCopy found of an interrupted first copy.
type CopyResume struct {
	Done [][2]int64 // heap page ranges already committed
	Rows int64      // rows they hold
}

// BeginCopy starts a table's copy, taken in a snapshot at lsn; rel is the
// table as the copy reads it and attnums its columns by attnum in that
// snapshot. The Iceberg schemas are first brought in line with rel (see
// alignForCopy), then the mirror's writers are bound to its columns, so
// copied values land in their columns even when the table changed since
// the last relation message, and no column is written as NULL for want of
// a field.
//
// A first copy (the mirror has no complete copy) is committed chunk by
// chunk. When an earlier run committed chunks of it, taken at an LSN at or
// after resumeFrom (where the stream will resume, so every change after
// those chunks is replayed over them), those chunks are kept and returned:
// the caller copies only the rest (unless the schema had to be brought in
// line: those chunks lack the new columns). Otherwise whatever the mirror holds (a
// copy from an earlier slot) is deleted by the copy's first commit, so rows
// deleted at the source since do not survive, and the key index is sized
// for sizeHint rows (0: unknown), at most what the table holds.
func (s *Sink) BeginCopy(ctx context.Context, rel *decode.Relation, attnums map[int]string, lsn, resumeFrom decode.LSN, sizeHint int64) (CopyResume, error) {
	st, ok := s.tables[rel.ID]
	if !ok {
		return CopyResume{}, nil
	}
	s.abandonSpecFor(st, "table "+rel.QualifiedName()+" is copied")
	aligned, err := s.alignForCopy(ctx, st, rel, attnums, lsn)
	if err != nil || st.mirror == nil {
		return CopyResume{}, err
	}
	m := st.mirror
	m.rel = rel
	if err := m.bind(); err != nil {
		return CopyResume{}, err
	}
	if m.bindErr != nil {
		return CopyResume{}, m.bindErr
	}
	run := &copyRun{progress: copyProgress{LSN: lsn}}
	s.copyMu.Lock()
	s.runs[rel.ID] = run
	s.copyMu.Unlock()
	if _, complete := m.tbl.Properties()[PropCopyLSN]; !complete {
		run.chunked = true
		// Chunks written under another schema lack the new columns, and a
		// resumed copy's rows replace live rows of their key (wrong where
		// rows may repeat): both start over.
		if p, ok := readCopyProgress(m.tbl); ok && !aligned && resumeFrom != 0 && p.LSN >= resumeFrom && len(p.Done) > 0 && !m.rel.WholeRow {
			run.progress, run.upsert = p, true
			s.log.Info("copy resumed: chunks committed before the restart are kept", "table", m.name(),
				"chunks_done", len(p.Done), "rows", m.index.Len(), "first_copied_at", p.LSN)
			return CopyResume{Done: p.Done, Rows: int64(m.index.Len())}, nil
		}
	}
	// A mirror whose index is empty may hold files all the same: one an
	// outside writer gave deletes the index cannot be built from (see
	// mirror.recopyForeign).
	if m.index.Len() > 0 || LiveFilesOf(m.tbl.CurrentSnapshot()).Data > 0 {
		s.log.Warn("mirror already holds rows: the new copy replaces them", "table", m.name(), "rows", m.index.Len())
		m.truncate()
	}
	if len(m.keyType) == 1 && keyindex.IsEightByte(m.keyType[0]) && !m.rel.WholeRow {
		m.index.ReserveInts(int(sizeHint))
	}
	return CopyResume{}, nil
}

func readCopyProgress(tbl *table.Table) (copyProgress, bool) {
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return copyProgress{}, false
	}
	v, ok := snap.Summary.Properties[PropCopyProgress]
	if !ok {
		return copyProgress{}, false
	}
	var p copyProgress
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return copyProgress{}, false
	}
	return p, true
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
	return CopyLSNOf(st.mirror.tbl)
}

// CopyLSNOf returns the LSN a mirror's last complete copy was taken at
// (PropCopyLSN), if it has one.
func CopyLSNOf(tbl *table.Table) (decode.LSN, bool) {
	v, ok := tbl.Properties()[PropCopyLSN]
	if !ok {
		return 0, false
	}
	lsn, err := parseLSNProp(v)
	return lsn, err == nil
}

// CopyWriter writes rows of a table's copy into Parquet files of its own.
// Several CopyWriters of one table may run in parallel goroutines; each is
// used by one goroutine. ChunkDone and FinishCopy add their files and keys
// to the mirror.
type CopyWriter struct {
	m      *mirror // read only while copying
	fw     *fileWriter
	keys   keyindex.Keys // key of the row at each position of fw
	closed []copiedFile
	// part is the writer's own partitioner (nil: unpartitioned); fw is
	// of partition key, parked the open files of the others.
	part   *partitioner
	key    string
	parked map[string]copyOpen
}

// copyOpen is an open data file of a copy and the keys of its rows.
type copyOpen struct {
	fw   *fileWriter
	keys keyindex.Keys
}

// copiedFile is a closed data file of a copy, not yet committed.
type copiedFile struct {
	path string
	df   icego.DataFile
	keys keyindex.Keys
}

// NewCopyWriter returns a writer for a worker copying rows of relID, or nil
// when the table has no mirror (changelog only: nothing to copy).
func (s *Sink) NewCopyWriter(relID uint32) (*CopyWriter, error) {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil, nil
	}
	w := &CopyWriter{m: st.mirror}
	var err error
	if w.part, err = st.mirror.ownPartitioner(); err != nil {
		return nil, err
	}
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	s.copying[relID] = append(s.copying[relID], w)
	return w, nil
}

// Row writes one copied row, in text or binary form (every value in one
// form; see appendTuple). It keeps nothing of row: the key is copied, the
// values are appended to Arrow builders.
func (w *CopyWriter) Row(row decode.Tuple) error {
	if w == nil {
		return nil
	}
	if err := w.openFor(row); err != nil {
		return err
	}
	b, err := w.m.appendKey(w.keys.Tail(), row)
	if err != nil {
		return err
	}
	if err := w.m.appendRow(w.fw.builder, row); err != nil {
		return err
	}
	w.keys.Push(b)
	if err := w.fw.pw.RowDone(); err != nil {
		return err
	}
	// The file's size changes only when a batch is written.
	target := w.fw.target
	if target == 0 {
		target = copyFileTarget
	}
	if full(w.fw, target) || w.keys.Size() >= copyKeysTarget {
		return w.closeCurrent()
	}
	return nil
}

// closeFile closes the open data files, if any.
func (w *CopyWriter) closeFile() error {
	if w == nil {
		return nil
	}
	for k, o := range w.parked {
		delete(w.parked, k)
		if err := w.closeOne(o.fw, o.keys); err != nil {
			return err
		}
	}
	return w.closeCurrent()
}

// closeCurrent closes the data file of the last row's partition, if any.
func (w *CopyWriter) closeCurrent() error {
	if w.fw == nil {
		return nil
	}
	fw, keys := w.fw, w.keys
	w.fw, w.keys = nil, keyindex.Keys{}
	return w.closeOne(fw, keys)
}

// closeOne closes fw, whose rows have keys.
func (w *CopyWriter) closeOne(fw *fileWriter, keys keyindex.Keys) error {
	df, err := fw.close()
	if err != nil {
		return err
	}
	if order := fw.pw.Order(); order != nil {
		keys = sortedKeys(&keys, order)
	}
	w.closed = append(w.closed, copiedFile{path: fw.path, df: df, keys: keys})
	return nil
}

// take adds the writer's closed files to the mirror's pending commit and
// their rows to the key index. With upsert a row replaces a live row of
// its key; otherwise a key seen twice is an error.
func (w *CopyWriter) take(upsert bool) (int, error) {
	m, rows := w.m, 0
	for _, f := range w.closed {
		id := m.index.AddFile(f.path)
		m.closed = append(m.closed, f.df)
		if upsert {
			for pos := range f.keys.Len() {
				k := f.keys.Key(pos)
				m.deleteKey(&m.batch, m.index, string(k))
				m.index.Add(k, keyindex.Loc{File: id, Pos: int64(pos)})
			}
		} else if k, ok := m.index.AddAll(&f.keys, id); !ok {
			return rows, fmt.Errorf("%s: key %q copied twice", m.name(), k)
		}
		rows += f.keys.Len()
	}
	if n := len(w.closed); n > 0 && w.fw == nil && w.keys.Len() == 0 {
		// The next file's keys reuse the buffers of the last one.
		w.keys = w.closed[n-1].keys.Recycle()
	}
	m.changes += rows
	w.closed = nil
	return rows, nil
}

// ChunkDone is called when w has written every row of the heap pages
// [from, to) (to 0: to the end). A first copy commits them now, with the
// chunk recorded in the snapshot summary (PropCopyProgress), so a restart
// does not copy them again; a resync keeps them for FinishCopy.
func (s *Sink) ChunkDone(ctx context.Context, relID uint32, w *CopyWriter, from, to int64) error {
	s.copyMu.Lock()
	run := s.runs[relID]
	s.copyMu.Unlock()
	if w == nil || run == nil || !run.chunked {
		return nil
	}
	if err := w.closeFile(); err != nil {
		return err
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	m := w.m
	rows, err := w.take(run.upsert)
	if err != nil {
		return err
	}
	run.progress.Done = append(run.progress.Done, [2]int64{from, to})
	p, err := json.Marshal(run.progress)
	if err != nil {
		return err
	}
	m.summary = icego.Properties{PropCopyProgress: string(p)}
	m.lastEnd = m.watermark // a chunk says nothing about the stream
	m.changes++             // commit the progress even for an empty chunk
	if err := m.flush(ctx, s); err != nil {
		return err
	}
	s.log.Info("copy chunk committed", "table", m.name(), "pages_from", from, "pages_to", to, "rows", rows, "chunks_done", len(run.progress.Done))
	crashPoint("copy-chunk")
	return nil
}

// AbortCopy drops a failed or stopped copy of relID: the files its
// writers wrote and no commit took (see ChunkDone, FinishCopy) are deleted.
// Call it once every writer of the copy is done.
func (s *Sink) AbortCopy(relID uint32) {
	s.copyMu.Lock()
	writers := s.copying[relID]
	delete(s.copying, relID)
	delete(s.runs, relID)
	s.copyMu.Unlock()
	for _, w := range writers {
		w.abort()
	}
}

// abort deletes the writer's files: the open one and those closed and not
// taken into a commit yet.
func (w *CopyWriter) abort() {
	if w.fw != nil {
		w.fw.abort()
		w.fw = nil
	}
	for k, o := range w.parked {
		o.fw.abort()
		delete(w.parked, k)
	}
	for _, f := range w.closed {
		removeFile(w.m.fs, f.path)
	}
	w.closed, w.keys = nil, keyindex.Keys{}
}

// FinishCopy commits a table's copied rows not committed yet and marks the
// copy complete, with the watermark lsn (the snapshot the copy was taken
// in). Until the mark is set the copy counts as not done.
//
// A resumed copy holds chunks taken at an earlier LSN: its mark and the
// mirror's watermark are that LSN, so the stream replays every change since
// over them (a replayed change is an upsert or delete by key, so rows the
// later snapshot already has converge), and the changelog starts at lsn,
// where the copy is consistent. A resync of a table that had a complete
// copy writes an R row (resync at lsn) into its changelog.
func (s *Sink) FinishCopy(ctx context.Context, relID uint32, lsn decode.LSN) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	m := st.mirror
	defer s.publishStatus() // the copy's LSN is the mirror's watermark now
	crashPoint("copy-finish")
	s.copyMu.Lock()
	writers := s.copying[relID]
	delete(s.copying, relID)
	run := s.runs[relID]
	delete(s.runs, relID)
	s.copyMu.Unlock()
	upsert := run != nil && run.upsert
	for _, w := range writers {
		if err := w.closeFile(); err != nil {
			return err
		}
		if _, err := w.take(upsert); err != nil {
			return err
		}
	}
	mirrorLSN := lsn
	props := map[string]string{}
	if upsert {
		mirrorLSN = run.progress.LSN
		props[PropChangelogFrom] = strconv.FormatUint(uint64(lsn), 10)
	}
	props[PropCopyLSN] = strconv.FormatUint(uint64(mirrorLSN), 10)
	m.lastEnd = mirrorLSN
	if err := m.flush(ctx, s); err != nil {
		return err
	}
	_, recopy := m.tbl.Properties()[PropCopyLSN]
	c := st.changelog
	resync := c != nil && (recopy || st.mirrorAdded || c.tbl.CurrentSnapshot() != nil)
	if resync {
		// The resync row is committed after this mark, in the changelog:
		// a crash in between leaves the mark ahead of the changelog's,
		// and the next start writes the row (ResyncPending).
		props[PropResyncAt] = strconv.FormatUint(uint64(lsn), 10)
	}
	txn := m.tbl.NewTransaction()
	if _, pending := m.tbl.Properties()[PropRecopy]; pending {
		if err := txn.RemoveProperties([]string{PropRecopy}); err != nil {
			return fmt.Errorf("mark copy of %s complete: %w", m.name(), err)
		}
	}
	if err := m.commitTxn(ctx, txn, "mark complete the copy of", props); err != nil {
		return err
	}
	crashPoint("copy-done")
	if m.watermark < mirrorLSN {
		m.watermark = mirrorLSN
	}
	switch {
	case c == nil:
	case !resync:
		// A new table: its changelog starts where the copy is consistent.
		// A changelog with history (a table that had no key, whose mirror
		// is made now or at a start) keeps recording every change.
		c.watermark = max(c.watermark, lsn)
	default:
		// A table copied again, or whose mirror was added to its changelog
		// (AddMirror), keeps recording every change; the R row says where
		// the mirror was replaced (or filled).
		return s.recordResync(ctx, st, lsn)
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

// mirrorProps returns the table properties of a source table's mirror
// (nil without a mirror).
func mirrorProps(st *sourceTable) icego.Properties {
	if st.mirror == nil {
		return nil
	}
	return st.mirror.tbl.Properties()
}
