package iceberg

import (
	"context"
	"strconv"
	"time"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Compaction of a mirror while streaming: the stream's side. After a
// flush, a mirror whose current snapshot S holds enough files starts a
// job: a goroutine that plans and rewrites as of S (compact.go). Each
// later flush of the mirror records the deletes it commits (which may hit
// rows of files being rewritten). At the first flush after the job is
// done, the stream installs it in one commit:
//   - the rewritten data files and every live delete file out;
//   - the new data files in, with S's data sequence number, and two
//     delete files: S's deletes of files not rewritten (written by the
//     job) and the deletes committed since S, those of rewritten rows
//     moved to the rows' new positions (written now, small). Both take
//     the highest sequence number of the delete files they replace, at
//     least every data file's they apply to, so each still applies;
//   - the summary carries the mirror's watermark and the bridge's source,
//     so Watermark and onlyOurs take the snapshot as the bridge's.
//
// Then the key index moves the rewritten rows to their new places
// (keyindex.Index.Remap). The stream is held for that commit only.

// PropCompaction marks a compaction's snapshot: the data files it rewrote.
const PropCompaction = "pg2iceberg.compaction"

// LastCompaction returns when the newest compaction in the ancestry of
// tbl's current snapshot was committed (zero: none), for status.
func LastCompaction(tbl *table.Table) time.Time {
	meta := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil {
			if _, ok := s.Summary.Properties[PropCompaction]; ok {
				return time.UnixMilli(s.TimestampMs)
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return time.Time{}
}

// compactJob is a mirror's compaction in flight. The worker sets out and
// err, then closes done; the stream reads them only after done is closed.
// The other fields are the stream's.
type compactJob struct {
	base     *table.Table // the table as of S
	baseSeq  int64        // S's sequence number
	schemaID int
	cancel   context.CancelFunc
	done     chan struct{} // closed by the worker
	out      *rewrite      // nil: nothing was due
	err      error

	later      []posDelete      // deletes committed since S
	laterFiles []icego.DataFile // their delete files
	gone       bool             // the table's files were replaced since S (TRUNCATE, re-copy)
}

// compactState is a mirror's compaction bookkeeping (the stream's).
type compactState struct {
	job  *compactJob
	idle int       // after a plan found nothing due: the live file count that makes the next one worth it
	last time.Time // when a compaction was last installed
	tier tierState // hot/cold tiering (tier.go)
}

// noteFlush records a flush's committed deletes for the job in flight.
func (m *mirror) noteFlush(dels []icego.DataFile, truncated bool) {
	j := m.compact.job
	if j == nil {
		return
	}
	if truncated {
		j.gone = true
		return
	}
	j.later = append(j.later, m.deletes...)
	j.laterFiles = append(j.laterFiles, dels...)
}

// liveCounts returns the live data and delete files and rows of the
// current snapshot, and its deleted rows, from its summary.
func liveCounts(tbl *table.Table) (data, deletes int, rows, deleted int64) {
	l := LiveFilesOf(tbl.CurrentSnapshot())
	return int(l.Data), int(l.Deletes), l.Records, l.PositionDeletes
}

// planFunc plans a rewrite of base (nil: nothing is due): compaction's
// planRewrite, or tiering's planTier.
type planFunc func(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table) (*rewrite, []rewriteGroup, error)

// startCompaction starts a job that plans and rewrites the table as of
// its current snapshot, on its own goroutine: a compaction under c, or
// another rewrite (tiering) that plan chooses (nil: compaction's).
func (t *icebergTable) startCompaction(c tiering.CompactConfig, plan planFunc) {
	if plan == nil {
		plan = func(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table) (*rewrite, []rewriteGroup, error) {
			return planRewrite(ctx, fs, base, c)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &compactJob{base: t.tbl, baseSeq: t.tbl.CurrentSnapshot().SequenceNumber, schemaID: t.tbl.Metadata().CurrentSchema().ID, cancel: cancel, done: make(chan struct{})}
	t.compact.job = j
	fs := t.fs
	go func() {
		defer close(j.done)
		r, groups, err := plan(ctx, fs, j.base)
		if err != nil || r == nil {
			j.err = err
			return
		}
		if err := r.run(ctx, fs, j.base, c, groups); err != nil {
			j.err = err
			return
		}
		j.out = r
	}()
}

// compactDue reports whether the table's current snapshot calls for a
// compaction under c, and none is in flight. The policy decides in the
// job; the summary's counts only decide whether asking is worth reading
// the files and deletes.
func (t *icebergTable) compactDue(c tiering.CompactConfig) bool {
	if t.compact.job != nil || !c.Enabled || t.tbl.CurrentSnapshot() == nil {
		return false
	}
	data, dels, rows, deleted := liveCounts(t.tbl)
	live := data + dels
	heavy := rows > 0 && float64(deleted)/float64(rows) > c.DeleteRatio
	return live >= t.compact.idle && (live >= c.MinInputFiles || dels > c.MaxDeleteFiles || heavy)
}

// maybeCompact starts a compaction of the mirror when one is due. A
// whole-row key (rows may repeat: Remap cannot move them) is not
// compacted.
func (m *mirror) maybeCompact(s *Sink) {
	if m.rel.WholeRow {
		return
	}
	if c := s.compactConfig(m.icebergTable, m.rel); m.compactDue(c) {
		m.startCompaction(c, nil)
	} else {
		m.maybeTier(s, m.rel, c)
	}
}

// compactConfig is the compaction policy of t, rel's mirror or changelog:
// its properties, overridden by the configuration file's compaction:
// block for rel.
func (s *Sink) compactConfig(t *icebergTable, rel *decode.Relation) tiering.CompactConfig {
	c := tiering.CompactConfigOf(t.tbl.Properties())
	p := s.cfg.Rules.Policies(rel.QualifiedName()).Compaction
	if p == nil {
		return c
	}
	return c.With(p.Enabled, p.MinInputFiles, p.MaxLiveFiles, p.MaxDeleteFiles, p.DeleteRatio, p.TargetFileBytes)
}

// finished takes the table's compaction job when it is done and can be
// installed; nil when there is none, it is still running, or it came to
// nothing (failed, nothing was due, the table changed under it).
func (t *icebergTable) finished(s *Sink) *compactJob {
	j := t.compact.job
	if j == nil {
		return nil
	}
	select {
	case <-j.done:
	default:
		return nil
	}
	t.compact.job = nil
	j.cancel()
	switch {
	case j.err != nil:
		s.stats.CompactionFailures.Add(1)
		s.log.Warn("compaction failed; the next one tries again", "table", t.name(), "error", j.err)
		return nil
	case j.out == nil:
		data, dels, _, _ := liveCounts(t.tbl)
		t.compact.idle = data + dels + max(tiering.CompactConfigOf(t.tbl.Properties()).MinInputFiles/2, 1)
		return nil
	case j.gone || t.tbl.Metadata().CurrentSchema().ID != j.schemaID:
		j.out.discard(t.fs)
		s.log.Info("compaction dropped", "table", t.name(), "reason", errCompactionGone)
		return nil
	}
	t.compact.idle = 0
	return j
}

// installCompaction installs the mirror's finished compaction, if any. It
// runs between flushes, with nothing pending. A failed or outdated
// compaction is dropped: the data commits never depend on one.
func (m *mirror) installCompaction(ctx context.Context, s *Sink) {
	if m.changes > 0 || s.spec != nil {
		return
	}
	j := m.finished(s)
	if j == nil {
		return
	}
	r := j.out
	later, err := m.laterDeletes(ctx, j)
	if err == nil {
		var live dvState
		if live, err = m.liveDVs(ctx); err == nil {
			err = m.commitRewrite(ctx, s, j, later, live.byData)
		}
	}
	if err != nil {
		s.stats.CompactionFailures.Add(1)
		s.log.Warn("compaction not installed; the next one tries again", "table", m.name(), "error", err)
		return
	}
	crashPoint("compact-committed")
	m.remapIndex(ctx, s, r)
}

// laterDeletes writes the deletes committed since the job's snapshot into
// one delete file per spec and partition of their data files (none:
// none), those of rewritten rows moved to the rows' new positions.
func (m *mirror) laterDeletes(ctx context.Context, j *compactJob) ([]icego.DataFile, error) {
	r := j.out
	later := make([]posDelete, 0, len(j.later))
	for _, d := range j.later {
		rows, ok := r.moved[d.path]
		if !ok && m.usesDVs() {
			continue // in its file's live DV, which stays
		}
		if ok {
			if d.pos >= int64(len(rows)) || rows[d.pos].file < 0 {
				continue // a row deleted before S: the rewrite dropped it already
			}
			to := rows[d.pos]
			d = posDelete{path: r.newData[to.file].FilePath(), pos: to.pos}
		}
		later = append(later, d)
	}
	if len(later) == 0 {
		return nil, nil
	}
	sortDeletes(later)
	opts, _ := m.fileLayout()
	refs := make(map[string]fileRef, len(r.newData)+len(r.files))
	for _, df := range r.files {
		refs[df.FilePath()] = refOf(df)
	}
	for _, df := range r.newData {
		refs[df.FilePath()] = refOf(df)
	}
	dfs, err := writeDeletesOf(ctx, m.fs, m.tbl, later, func(path string) (fileRef, error) {
		if ref, ok := refs[path]; ok {
			return ref, nil
		}
		return m.fileRefOf(path)
	}, opts)
	if err != nil {
		r.discard(m.fs)
		return nil, err
	}
	return dfs, nil
}

// commitRewrite commits j's rewrite in one snapshot: its old data files and
// every live delete file out (the job's snapshot's and laterFiles), its
// new files and later (may be nil) in. On a v3 table (live: its live
// deletion vectors by data file) only the DVs of rewritten files go out:
// the other files' DVs, those of the snapshot and laterFiles alike, stay.
// The summary carries the table's watermark and the bridge's source.
func (t *icebergTable) commitRewrite(ctx context.Context, s *Sink, j *compactJob, later []icego.DataFile, live map[string]icego.DataFile) error {
	start := time.Now()
	r := j.out
	before, beforeDels, _, _ := liveCounts(t.tbl)
	props := icego.Properties{
		PropLSN:        strconv.FormatUint(uint64(t.watermark), 10),
		PropSource:     s.cfg.Source.String(),
		PropCommitID:   uuid.NewString(),
		PropCompaction: strconv.Itoa(len(r.oldData)),
	}
	if r.tier {
		props[PropTiering] = strconv.Itoa(len(r.oldData))
	}
	txn := t.tbl.NewTransaction()
	rw := stageRewrite(txn, r, j.baseSeq, props, live)
	if r.dvs == nil {
		for _, df := range j.laterFiles {
			rw.DeleteFile(df)
		}
	}
	for _, df := range later {
		rw.AddDeleteFile(df)
	}
	crashPoint("compact-install")
	if err := rw.Commit(ctx); err != nil {
		// Refused before any catalog commit (a file no longer live, say):
		// nothing can name the files.
		r.discard(t.fs)
		for _, df := range later {
			removeFile(t.fs, df.FilePath())
		}
		return err
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		// The files stay: an unknown outcome may have committed them.
		reloaded, lerr := s.cat.LoadTable(ctx, t.ident)
		if lerr != nil || !hasCommit(reloaded, props[PropCommitID]) {
			return err
		}
		tbl = reloaded
	}
	t.committedTo(tbl)
	s.stats.Compactions.Add(1)
	s.stats.BytesRewritten.Add(r.bytesRead)
	t.compact.last = time.Now()
	t.tiered(s, r)
	after, afterDels, _, _ := liveCounts(t.tbl)
	s.log.Info("compaction installed", "table", t.name(), "rewritten", len(r.oldData), "written", len(r.newData), "bytes_rewritten", r.bytesRead, "live_files_before", before+beforeDels, "live_files", after+afterDels, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// stageRewrite starts the rewrite snapshot of r on txn: r's old data files
// and the snapshot's delete files out, its new files in. The new data
// files keep the data sequence number of the snapshot r read (seq), so
// every delete committed since still applies to them by sequence number;
// the added delete files take the highest of the delete files replaced.
//
// On a v3 table, live are the table's live deletion vectors by data file
// (they may have replaced the snapshot's since): those of rewritten files
// go out, and a kept DV (see run) of a file that has a live one now is
// not added, as that one holds its rows too (see mirror.writeDVs).
func stageRewrite(txn *table.Transaction, r *rewrite, seq int64, props icego.Properties, live map[string]icego.DataFile) *table.RewriteFiles {
	rw := txn.NewRewrite(props)
	for _, df := range r.oldData {
		rw.DeleteFile(df)
		if dv, ok := live[df.FilePath()]; ok {
			rw.DeleteFile(dv)
		}
	}
	for _, df := range r.oldDeletes {
		rw.DeleteFile(df)
	}
	for _, df := range r.newData {
		rw.AddDataFile(df)
	}
	rw.DataSequenceNumber(seq)
	for _, df := range r.kept {
		if table.IsDeletionVector(df) {
			if _, ok := live[*df.ReferencedDataFile()]; ok {
				continue
			}
		}
		rw.AddDeleteFile(df)
	}
	return rw
}

// remapIndex moves the key index's rows of rewritten files to where the
// rewrite put them; if the index and the rewrite disagree, it rebuilds
// the index from the table instead.
func (m *mirror) remapIndex(ctx context.Context, s *Sink, r *rewrite) {
	newIDs := make([]int32, len(r.newData))
	for i, df := range r.newData {
		newIDs[i] = m.index.AddFile(df.FilePath())
	}
	locs := make(map[string][]keyindex.Loc, len(r.moved))
	for p, rows := range r.moved {
		l := make([]keyindex.Loc, len(rows))
		for i, rw := range rows {
			l[i] = keyindex.Loc{File: -1}
			if rw.file >= 0 {
				l[i] = keyindex.Loc{File: newIDs[rw.file], Pos: rw.pos}
			}
		}
		locs[p] = l
	}
	moved := make(map[int32][]keyindex.Loc)
	for id, p := range m.index.Files() {
		if l, ok := locs[p]; ok {
			moved[int32(id)] = l
		}
	}
	if _, ok := m.index.Remap(moved); ok {
		return
	}
	s.log.Warn("key index does not match the compaction; rebuilding it", "table", m.name())
	if err := m.rebuildIndex(ctx); err != nil {
		s.log.Error("key index rebuild failed", "table", m.name(), "error", err)
	}
}

// afterFlush installs finished compactions and starts due ones, for every
// mirror (the stream's goroutine, after a flush has committed).
func (s *Sink) afterFlush(ctx context.Context) {
	if s.spec != nil || s.copyInProgress() {
		return
	}
	for _, st := range s.tables {
		if st.mirror != nil {
			st.mirror.installCompaction(ctx, s)
			st.mirror.maybeCompact(s)
		}
		if st.changelog != nil {
			st.changelog.installCompaction(ctx, s)
			st.changelog.maybeCompact(s)
		}
	}
}

// copyInProgress reports whether a table is being copied.
func (s *Sink) copyInProgress() bool {
	s.copyMu.Lock()
	defer s.copyMu.Unlock()
	return len(s.copying) > 0 || len(s.runs) > 0
}

// stopCompactions cancels the compactions in flight, waits for them and
// removes what they wrote (before a clean stop).
func (s *Sink) stopCompactions() {
	for _, st := range s.tables {
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil || t.compact.job == nil {
				continue
			}
			j := t.compact.job
			j.cancel()
			<-j.done
			if j.out != nil {
				j.out.discard(t.fs)
			}
			t.compact.job = nil
		}
	}
}

// maybeCompact starts a compaction of the changelog when one is due:
// append-only, so its small files are merged per partition (commit_ts
// day), with nothing to remap.
func (c *changelog) maybeCompact(s *Sink) {
	if cfg := s.compactConfig(c.icebergTable, c.rel); c.compactDue(cfg) {
		c.startCompaction(cfg, nil)
	} else {
		c.maybeTier(s, c.rel, cfg)
	}
}

// installCompaction installs the changelog's finished compaction, if any
// (between flushes, with nothing pending).
func (c *changelog) installCompaction(ctx context.Context, s *Sink) {
	if c.changes > 0 {
		return
	}
	if j := c.finished(s); j != nil {
		if err := c.commitRewrite(ctx, s, j, nil, nil); err != nil {
			s.stats.CompactionFailures.Add(1)
			s.log.Warn("compaction not installed; the next one tries again", "table", c.name(), "error", err)
		}
	}
}
