package iceberg

import (
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Stats are the sink's counters, readable from any goroutine.
type Stats struct {
	Changes atomic.Int64 // row changes applied
	Flushes atomic.Int64 // flushes committed
	// ExpireFailures counts snapshot expiries (or their file deletes) that
	// failed; each is retried at the next expiry.
	ExpireFailures atomic.Int64
	// Maintenance after commits (tiering.Schedule): snapshots expired,
	// manifest rewrites committed, orphan files removed and their bytes.
	SnapshotsExpired atomic.Int64
	ManifestRewrites atomic.Int64
	OrphansRemoved   atomic.Int64
	OrphanBytes      atomic.Int64
	// Compactions counts mirror compactions installed, CompactionFailures
	// those that failed (each retried by a later one), BytesRewritten the
	// bytes of the data files they rewrote.
	Compactions, CompactionFailures, BytesRewritten atomic.Int64
	// OnFlush, when set before the sink streams, is called after each
	// flush committed: its changes, its Parquet bytes, how long it took,
	// and how long ago the oldest of its source transactions committed.
	OnFlush func(rows int, bytes int64, took, latency time.Duration)
	// Tierings counts the rewrites among them that moved data files to a
	// table's cold location, BytesTiered the bytes of the files moved.
	Tierings, BytesTiered atomic.Int64
	// tables holds the []TableStatus of the last flush.
	tables atomic.Pointer[[]TableStatus]
	// committedTS is the source commit time (Unix ns) of the newest
	// transaction committed to Iceberg or touching none of its tables;
	// pendingTS the oldest pending one's (0: none pending).
	committedTS, pendingTS atomic.Int64
}

// SourceTimes returns the source commit time of the newest transaction
// that is durable (zero before the first), and of the oldest one received
// but not yet committed (zero when none is pending).
func (st *Stats) SourceTimes() (committed, oldestPending time.Time) {
	return unixNano(st.committedTS.Load()), unixNano(st.pendingTS.Load())
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sourceCommitted records a durable transaction's source commit time.
func (st *Stats) sourceCommitted(ts time.Time) {
	if !ts.IsZero() && ts.UnixNano() > st.committedTS.Load() {
		st.committedTS.Store(ts.UnixNano())
	}
}

// pendingSince records the source commit time of a batch's first
// transaction.
func (st *Stats) pendingSince(ts time.Time) {
	if !ts.IsZero() {
		st.pendingTS.Store(ts.UnixNano())
	}
}

// flushed records a committed flush whose newest transaction committed at
// the source at newest.
func (st *Stats) flushed(rows int, bytes int64, took time.Duration, newest time.Time) {
	oldest := unixNano(st.pendingTS.Swap(0))
	st.sourceCommitted(newest)
	if st.OnFlush != nil {
		var latency time.Duration
		if !oldest.IsZero() {
			latency = time.Since(oldest)
		}
		st.OnFlush(rows, bytes, took, latency)
	}
}

// Files the bridge wrote and then abandoned before any commit named them
// (an aborted writer, a discarded speculation, a stopped copy, a flush's
// files before a TRUNCATE): deleted at once, or kept when the delete failed (an orphan
// for orphan-file cleanup). Process-wide: writers do not know their sink.
var abandonedRemoved, abandonedKept atomic.Int64

// AbandonedFiles returns how many abandoned files were deleted, and how
// many could not be.
func (st *Stats) AbandonedFiles() (removed, kept int64) {
	return abandonedRemoved.Load(), abandonedKept.Load()
}

// Tables returns every Iceberg table's watermark as of the last flush.
func (st *Stats) Tables() []TableStatus {
	if p := st.tables.Load(); p != nil {
		return *p
	}
	return nil
}

// Stats returns the sink's counters.
func (s *Sink) Stats() *Stats { return s.stats }

func (s *Sink) publishStatus() {
	st := s.Status()
	s.stats.tables.Store(&st)
}

// TableStatus is one Iceberg table's progress.
type TableStatus struct {
	Table     string
	Watermark decode.LSN
	Committed time.Time
	// OutsideCommits counts the snapshots of other writers the bridge's
	// commits found on the table (see icebergTable.reconcile).
	OutsideCommits int64
	Live           LiveFiles
	// LastCompaction is when the bridge last installed a compaction of
	// the table (zero: not since it started).
	LastCompaction time.Time
	// IndexKeys is the number of keys in a mirror's key index (0 for a
	// changelog).
	IndexKeys int64
	// HotBytes and ColdBytes are the bytes of the table's live data files
	// in its own location and in its cold location, as of the bridge's
	// last tiering check; Tiered: the table has tiering on and was checked.
	HotBytes, ColdBytes int64
	Tiered              bool
}

// LiveFiles are the files of a table's current snapshot, their size, and
// the rows and position deletes they hold.
type LiveFiles struct {
	Data, Deletes   int64
	Bytes           int64 // data and delete files together
	Records         int64 // rows of the data files, deleted ones included
	PositionDeletes int64
}

// LiveFilesOf reads a snapshot's live files from the totals in its
// summary, which every writer keeps (Iceberg's total-data-files,
// total-delete-files, total-files-size, total-records,
// total-position-deletes): no manifest is read.
func LiveFilesOf(snap *table.Snapshot) LiveFiles {
	if snap == nil || snap.Summary == nil {
		return LiveFiles{}
	}
	n := func(k string) int64 {
		v, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64)
		return v
	}
	return LiveFiles{Data: n("total-data-files"), Deletes: n("total-delete-files"), Bytes: n("total-files-size"),
		Records: n("total-records"), PositionDeletes: n("total-position-deletes")}
}

// Status lists every Iceberg table's watermark.
func (s *Sink) Status() []TableStatus {
	var out []TableStatus
	for _, st := range s.tables {
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t != nil {
				ts := TableStatus{Table: t.name(), Watermark: t.watermark, Committed: t.committed, OutsideCommits: t.outside, Live: LiveFilesOf(t.tbl.CurrentSnapshot())}
				if st.mirror != nil && t == st.mirror.icebergTable {
					ts.LastCompaction = st.mirror.compact.last
					if st.mirror.index != nil {
						ts.IndexKeys = int64(st.mirror.index.Len())
					}
				}
				if tr := &t.compact.tier; tr.checked.Load() {
					ts.Tiered, ts.HotBytes, ts.ColdBytes = true, tr.hot.Load(), tr.cold.Load()
				}
				out = append(out, ts)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}
