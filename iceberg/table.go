package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Snapshot summary properties the bridge writes and reads. PropLSN and
// PropSource are also table properties, set by each of its commits.
const (
	PropLSN      = "pg2iceberg.lsn"       // end LSN of the last source transaction contained
	PropSource   = "pg2iceberg.source"    // source identity: system id/database/slot
	PropCommitID = "pg2iceberg.commit-id" // unique per commit attempt, for unknown outcomes
)

// PropCut is a table property each flush's commits set: the source LSN of
// the newest flush that had committed every table of the source before
// this one began (Sink.Durable then). At that LSN every table's state is
// known (each table's newest snapshot with a watermark at or below it), so
// the largest PropCut over a source's tables is a consistent cut across
// them (see history.Cut).
const PropCut = "pg2iceberg.cut"

// Table properties set on every table the bridge creates.
var tableProps = icego.Properties{
	"format-version": "2",
	"write.metadata.delete-after-commit.enabled": "true",
	"write.metadata.previous-versions-max":       "20",
	"write.parquet.compression-codec":            "zstd",
	"write.delete.mode":                          "merge-on-read",
	"write.update.mode":                          "merge-on-read",
}

// icebergTable is one Iceberg table the bridge writes (a mirror or a
// changelog) with its commit watermark.
type icebergTable struct {
	ident     table.Identifier
	tbl       *table.Table
	fs        icebergio.WriteFileIO
	watermark decode.LSN       // end LSN of the last source transaction committed
	cut       decode.LSN       // the complete cut to record with the next commit (PropCut); 0: none
	resyncAt  decode.LSN       // a changelog's resync row to record with the next commit (PropResyncAt); 0: none
	committed time.Time        // when the bridge last committed to it
	upkeep    tiering.Schedule // maintenance after commits
	// bindErr is a source column whose type the schema cannot hold (see
	// lenientBind): writing a row is an error until the schema evolves.
	bindErr error
	layout  layout // file settings from the table's properties (see fileLayout)
	// log and stats (may be nil) take expiry failures, which never fail
	// the commit that triggered them.
	log   *slog.Logger
	stats *Stats
	// superseded are the deletion vectors the commit in flight removes,
	// each replaced by one of its delete files (see mirror.writeDVs).
	superseded []icego.DataFile
	// unsure: a commit of this table's files was sent and its outcome is
	// unknown (the reload that would tell failed): the catalog may
	// reference the files, so a discarded sink keeps them (orphan cleanup
	// removes them if no commit does).
	unsure bool
	// positional: a mirror, whose commits hold position deletes and whose
	// key index points at rows (see reconcile); outside counts the outside
	// snapshots its commits found.
	positional bool
	outside    int64
	// compact is the table's compaction in flight and its bookkeeping
	// (see compact_install.go).
	compact compactState
}

// maybeExpire runs the table's maintenance when due, after a commit (see
// tiering.Schedule). A failure is logged and counted, not returned: the
// data commit stands and the next expiry tries again.
func (t *icebergTable) maybeExpire(ctx context.Context, cat catalog.Catalog) error {
	u := t.upkeep.AfterCommit(ctx, cat, t.tbl)
	if u == nil {
		return nil
	}
	for _, err := range u.Failures {
		t.expireFailed(err)
	}
	t.countUpkeep(u)
	if u.GaveUp > 0 && t.log != nil {
		t.log.Warn("giving up deleting files of expired snapshots; orphan file cleanup can remove them", "table", t.name(), "expiries", u.GaveUp)
	}
	t.committedTo(u.Table)
	return nil
}

// countUpkeep counts what the table's maintenance did.
func (t *icebergTable) countUpkeep(u *tiering.Upkeep) {
	if t.stats == nil {
		return
	}
	t.stats.SnapshotsExpired.Add(int64(u.Expired))
	if u.Manifests != nil && u.Manifests.Rewritten {
		t.stats.ManifestRewrites.Add(1)
	}
	if u.Orphans != nil {
		t.stats.OrphansRemoved.Add(int64(u.Orphans.Removed))
		t.stats.OrphanBytes.Add(u.Orphans.RemovedBytes)
	}
}

// expireFailed logs and counts an expiry failure (nil: none).
func (t *icebergTable) expireFailed(err error) {
	if err == nil {
		return
	}
	if t.stats != nil {
		t.stats.ExpireFailures.Add(1)
	}
	if t.log != nil {
		t.log.Warn("snapshot expiry failed; the next expiry tries again", "table", t.name(), "error", err, "retry_in", tiering.ExpireEvery)
	}
}

// committedTo takes the table as a commit left it and points the table's
// metadata/version-hint.text at its metadata file, so readers without a
// catalog (DuckDB's iceberg_scan on the table directory) find it. The
// commit stands whatever happens to the hint: a hint not written is
// logged, and the table's next commit writes one again. (Failing the
// commit here would have the caller discard files the catalog already
// references.)
func (t *icebergTable) committedTo(tbl *table.Table) {
	changed := t.tbl == nil || t.tbl.MetadataLocation() != tbl.MetadataLocation()
	t.tbl = tbl
	if !changed {
		return
	}
	name := path.Base(tbl.MetadataLocation())
	hint := strings.TrimSuffix(name, ".metadata.json")
	if err := t.fs.WriteFile(tbl.Location()+"/metadata/version-hint.text", []byte(hint)); err != nil && t.log != nil {
		t.log.Warn("version hint not written; readers without a catalog see the table's previous version until its next commit", "table", t.name(), "error", err)
	}
}

func (t *icebergTable) name() string { return strings.Join(t.ident, ".") }

// ensureTable loads the table, creating namespace and table when missing.
func ensureTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, sc *icego.Schema, spec *icego.PartitionSpec, extra icego.Properties) (*table.Table, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil {
		return tbl, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
	}
	props := maps.Clone(tableProps)
	maps.Copy(props, tiering.DefaultRetention)
	maps.Copy(props, extra)
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(spec))
	}
	tbl, err = cat.CreateTable(ctx, ident, sc, opts...)
	if err != nil {
		return nil, fmt.Errorf("create table %s: %w", strings.Join(ident, "."), err)
	}
	if !locationTaken(ctx, tbl) {
		return tbl, nil
	}
	// A table renamed away from this name (see renameTable) keeps its files
	// where they are: the name's default location is another table's. Two
	// tables in one directory would confuse readers without a catalog (its
	// version-hint.text) and orphan-file cleanup (each other's files look
	// like orphans). The new table gets a location of its own.
	if err := cat.DropTable(ctx, ident); err != nil {
		return nil, fmt.Errorf("create table %s: its default location %s belongs to another table; dropping the table created there: %w", strings.Join(ident, "."), tbl.Location(), err)
	}
	if fs, err := tbl.FS(ctx); err == nil {
		if wfs, ok := fs.(icebergio.WriteFileIO); ok {
			_ = wfs.Remove(tbl.MetadataLocation())
		}
	}
	loc := tbl.Location() + "-" + uuid.NewString()[:8]
	tbl, err = cat.CreateTable(ctx, ident, sc, append(opts, catalog.WithLocation(loc))...)
	if err != nil {
		return nil, fmt.Errorf("create table %s at %s: %w", strings.Join(ident, "."), loc, err)
	}
	return tbl, nil
}

// locationTaken reports whether a table just created shares its location
// with a table the bridge wrote before: the version hint openTable writes
// for every table is there already.
func locationTaken(ctx context.Context, tbl *table.Table) bool {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return false
	}
	f, err := fs.Open(tbl.Location() + "/metadata/version-hint.text")
	if err != nil {
		return false
	}
	_ = f.Close()
	return true
}

// openTable loads the table, creating it (with the extra properties, may
// be nil) when missing, and reads its watermark.
func openTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, sc *icego.Schema, spec *icego.PartitionSpec, source string, extra icego.Properties) (*icebergTable, error) {
	tbl, err := ensureTable(ctx, cat, ident, sc, spec, extra)
	if err != nil {
		return nil, err
	}
	// The file IO keeps its context for every later write: it must outlive
	// a cancelled run context, so the final flush at shutdown can finish.
	fs, err := tbl.FS(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("file IO of %s: %w", strings.Join(ident, "."), err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file IO of %s cannot write", strings.Join(ident, "."))
	}
	t := &icebergTable{ident: ident, fs: wfs}
	t.committedTo(tbl)
	if t.watermark, t.committed, err = Watermark(tbl, source); err != nil {
		return nil, err
	}
	return t, nil
}

// Watermark walks the current snapshot's ancestry to the newest snapshot the
// bridge wrote and returns its LSN watermark and time. Snapshots written by
// others (maintenance) are passed over. A snapshot from another source is an
// error: two sources must never write one table.
func Watermark(tbl *table.Table, source string) (decode.LSN, time.Time, error) {
	meta := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil {
			if lsn, ok, err := ownWatermark(tbl, s.Summary.Properties, source, fmt.Sprintf("snapshot %d", s.SnapshotID)); ok || err != nil {
				return lsn, time.UnixMilli(s.TimestampMs), err
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	// No snapshot of the bridge's is left in the history (an outside job
	// expired them all, keeping only its own): the table property each
	// commit of the bridge's also sets still says what the table holds.
	lsn, ok, err := ownWatermark(tbl, meta.Properties(), source, "property")
	if !ok || err != nil {
		return 0, time.Time{}, err
	}
	return lsn, time.UnixMilli(meta.LastUpdatedMillis()), nil
}

// ownWatermark reads PropLSN from props (a snapshot's summary or the
// table's properties, where names them in errors): ok is false when props
// has none. Written from a source other than source (when given), it is
// an error: two sources must never write one table.
func ownWatermark(tbl *table.Table, props icego.Properties, source, where string) (lsn decode.LSN, ok bool, err error) {
	v, ok := props[PropLSN]
	if !ok {
		return 0, false, nil
	}
	if src := props[PropSource]; source != "" && src != source {
		return 0, true, fmt.Errorf("table %s was written from source %q, not %q: point the bridge at another warehouse or drop the table", strings.Join(tbl.Identifier(), "."), src, source)
	}
	if lsn, err = parseLSNProp(v); err != nil {
		return 0, true, fmt.Errorf("table %s %s: %w", strings.Join(tbl.Identifier(), "."), where, err)
	}
	return lsn, true, nil
}

func parseLSNProp(v string) (decode.LSN, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: %w", PropLSN, v, err)
	}
	return decode.LSN(n), nil
}

// tableProperties are the properties each commit sets on the table: the
// watermark (it outlives the snapshots, see Watermark) and the complete
// cut when known (PropCut), which costs no commit of its own.
func (t *icebergTable) tableProperties(lsn, source string) icego.Properties {
	p := icego.Properties{PropLSN: lsn, PropSource: source}
	if t.cut > 0 {
		p[PropCut] = strconv.FormatUint(uint64(t.cut), 10)
	}
	if t.resyncAt > 0 {
		p[PropResyncAt] = strconv.FormatUint(uint64(t.resyncAt), 10)
	}
	return p
}

// commit commits data and delete files in one snapshot whose summary carries
// the watermark lsn (and the extra properties, may be nil). It handles the three outcomes of a commit: committed;
// conflict (reload and retry); unknown (reload, look for our commit id).
func (t *icebergTable) commit(ctx context.Context, cat catalog.Catalog, data, deletes []icego.DataFile, lsn decode.LSN, source string, extra icego.Properties) error {
	return t.commitFiles(ctx, cat, data, deletes, false, lsn, source, extra)
}

// commitFiles is commit, and with replaceAll the snapshot also removes
// every data and delete file the table held before (see stageFiles).
func (t *icebergTable) commitFiles(ctx context.Context, cat catalog.Catalog, data, deletes []icego.DataFile, replaceAll bool, lsn decode.LSN, source string, extra icego.Properties) error {
	if len(data) == 0 && len(deletes) == 0 && (!replaceAll || t.tbl.CurrentSnapshot() == nil) {
		return nil
	}
	commitID := uuid.NewString()
	props := icego.Properties{
		PropLSN:      strconv.FormatUint(uint64(lsn), 10),
		PropSource:   source,
		PropCommitID: commitID,
	}
	maps.Copy(props, extra)
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		base, err := withoutReplay(t.tbl, cat)
		if err != nil {
			return fmt.Errorf("commit %s: %w", t.name(), err)
		}
		txn := base.NewTransaction()
		err = txn.SetProperties(t.tableProperties(props[PropLSN], source))
		if err == nil {
			err = t.stageFiles(ctx, txn, data, deletes, replaceAll, props)
		}
		sent := false
		if err == nil {
			var tbl *table.Table
			sent = true
			tbl, err = txn.Commit(ctx)
			if err == nil {
				t.watermark, t.committed = lsn, time.Now()
				t.committedTo(tbl)
				return t.maybeExpire(ctx, cat)
			}
		}
		lastErr = err
		if ctx.Err() != nil {
			t.unsure = t.unsure || sent
			break
		}
		// Conflict or unknown: reload and see what the catalog holds.
		tbl, lerr := cat.LoadTable(ctx, t.ident)
		if lerr != nil {
			t.unsure = t.unsure || sent
			return fmt.Errorf("commit %s: outcome unknown (%w), and reloading failed: %w; the files are kept", t.name(), err, lerr)
		}
		if hasCommit(tbl, commitID) {
			if t.log != nil {
				t.log.Warn("commit outcome was unknown: the catalog holds it (found by its commit id)", "table", t.name(), "error", err)
			}
			t.watermark, t.committed = lsn, time.Now()
			t.committedTo(tbl)
			return t.maybeExpire(ctx, cat)
		}
		if err := t.reconcile(tbl, source, replaceAll); err != nil {
			return err
		}
		t.tbl = tbl
	}
	return fmt.Errorf("commit %s: %w", t.name(), lastErr)
}

// stageFiles adds data and delete files to txn in a snapshot with the
// summary props. With replaceAll (a TRUNCATE, a re-copy) that snapshot
// also removes every data and delete file of the current snapshot, so a
// table emptied needs no position delete per row and keeps no reference
// to its old files. Iceberg cannot add delete files in that overwrite, so
// deletes of rows written since (the same flush) go in a second snapshot of
// the same transaction: both reach the catalog in one commit. On a format
// v3 table the new data files go in that second snapshot too: an
// overwrite must give each added file its first_row_id (row lineage),
// which a row delta's manifest assigns by inheritance (iceberg-go refuses
// a v3 overwrite without it), so the overwrite there only removes.
func (t *icebergTable) stageFiles(ctx context.Context, txn *table.Transaction, data, deletes []icego.DataFile, replaceAll bool, props icego.Properties) error {
	if replaceAll {
		oldData, oldDeletes, err := liveFiles(t.tbl, t.fs)
		if err != nil {
			return err
		}
		if len(oldData) > 0 || len(oldDeletes) > 0 {
			added := data
			if t.tbl.Metadata().Version() >= 3 {
				added = nil
			}
			if err := txn.ReplaceFiles(ctx, oldData, added, oldDeletes, props, table.WithoutAutoNameMapping()); err != nil {
				return err
			}
			if len(added) > 0 {
				data = nil
			}
			if len(data) == 0 && len(deletes) == 0 {
				return nil
			}
		}
	}
	if len(data) == 0 && len(deletes) == 0 {
		return nil
	}
	return txn.NewRowDelta(props).AddRows(data...).AddDeletes(deletes...).RemoveDeletes(t.superseded...).Commit(ctx)
}

// liveFiles returns the data and the delete files of tbl's current snapshot.
func liveFiles(tbl *table.Table, fs icebergio.IO) (data, deletes []icego.DataFile, err error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil, nil
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, fmt.Errorf("manifests of %v: %w", tbl.Identifier(), err)
	}
	for _, m := range manifests {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			if df := e.DataFile(); df.ContentType() == icego.EntryContentData {
				data = append(data, df)
			} else {
				deletes = append(deletes, df)
			}
		}
	}
	return data, deletes, nil
}

func hasCommit(tbl *table.Table, commitID string) bool {
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[PropCommitID] == commitID {
			return true
		}
	}
	return false
}

// reconcile looks at what a commit conflicted with, now the catalog's
// head: snapshots of the bridge's own (its compaction) or of another
// writer that a retry on top of now cannot harm are passed over; outside
// snapshots that moved rows of a mirror (see needsRebuild) are
// errRowsMoved, t being moved to now. A commit that replaces every file
// (replaceAll) and a changelog's appends never depend on where rows are.
func (t *icebergTable) reconcile(now *table.Table, source string, replaceAll bool) error {
	outside, connected := outsideSnapshots(now, t.tbl, source)
	if len(outside) == 0 && connected {
		return nil
	}
	t.outside += int64(len(outside))
	rebuild := t.positional && !replaceAll && needsRebuild(outside, connected)
	if t.log != nil {
		t.log.Info("outside commit found", "table", t.name(), "snapshots", snapshotIDs(outside), "ancestry_known", connected, "rebuild_key_index", rebuild)
	}
	if !rebuild {
		return nil
	}
	t.tbl = now
	return fmt.Errorf("commit %s: %w", t.name(), errRowsMoved)
}

// dataPath returns a new data file location in the table.
func dataPath(tbl *table.Table, partitionDir string) string {
	p := tbl.Location() + "/data/"
	if partitionDir != "" {
		p += partitionDir + "/"
	}
	return p + uuid.NewString() + ".parquet"
}

// setProperties sets table properties in a commit of their own; what says
// what for an error ("record attnums of" → "record attnums of s.t: ...").
func (t *icebergTable) setProperties(ctx context.Context, what string, props icego.Properties) error {
	return t.commitTxn(ctx, t.tbl.NewTransaction(), what, props)
}

// commitTxn sets props (may be nil) on txn (which may hold schema updates
// already), commits it and moves the table to the result.
func (t *icebergTable) commitTxn(ctx context.Context, txn *table.Transaction, what string, props icego.Properties) error {
	if len(props) > 0 {
		if err := txn.SetProperties(props); err != nil {
			return fmt.Errorf("%s %s: %w", what, t.name(), err)
		}
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, t.name(), err)
	}
	t.committedTo(tbl)
	return nil
}
