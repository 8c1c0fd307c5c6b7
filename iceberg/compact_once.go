package iceberg

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// CompactOptions tune CompactOnce. The zero value follows the table's
// policy (tiering.CompactConfigOf its properties).
type CompactOptions struct {
	// Force rewrites what the policy would take (small files, files with
	// deletes, the delete files) even when their count does not make a
	// compaction due yet.
	Force bool
	// DryRun plans only: the report says what would be rewritten
	// (FilesRewritten, BytesRewritten) and nothing is written.
	DryRun bool
}

// CompactReport is what CompactOnce did.
type CompactReport struct {
	Table                              string
	DataFilesBefore, DeleteFilesBefore int
	DataFilesAfter, DeleteFilesAfter   int
	FilesRewritten, FilesWritten       int // data files
	BytesRewritten, BytesWritten       int64
	Elapsed                            time.Duration
	Skipped                            string // why nothing was done ("" when something was)
}

// CompactOnce compacts one table once, outside the stream (pg2iceberg
// maintain): the same policy and rewrite as the bridge's own compaction,
// committed as an ordinary optimistic commit. It needs no key index: a
// running bridge sees the snapshot as another writer's (it carries no
// source) and reconciles its index with it. A commit that loses a race
// with the bridge fails; its files are left for orphan-file cleanup.
func CompactOnce(ctx context.Context, cat catalog.Catalog, ident table.Identifier, opts CompactOptions) (CompactReport, error) {
	start := time.Now()
	rep := CompactReport{Table: strings.Join(ident, ".")}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("compact %s: %w", rep.Table, err)
	}
	rep.DataFilesBefore, rep.DeleteFilesBefore, _, _ = liveCounts(tbl)
	rep.DataFilesAfter, rep.DeleteFilesAfter = rep.DataFilesBefore, rep.DeleteFilesBefore
	c := tiering.CompactConfigOf(tbl.Properties())
	switch {
	case !c.Enabled:
		rep.Skipped = tiering.PropCompactEnabled + " is false"
		return rep, nil
	case tbl.CurrentSnapshot() == nil:
		rep.Skipped = "the table has no snapshot"
		return rep, nil
	}
	if opts.Force {
		c.MinInputFiles, c.MaxDeleteFiles = 2, 0
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return rep, fmt.Errorf("compact %s: file IO: %w", rep.Table, err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return rep, fmt.Errorf("compact %s: file IO cannot write", rep.Table)
	}
	r, groups, err := planRewrite(ctx, wfs, tbl, c)
	if err != nil {
		return rep, fmt.Errorf("compact %s: %w", rep.Table, err)
	}
	if r == nil {
		rep.Skipped = "nothing is due"
		return rep, nil
	}
	if opts.DryRun {
		countDue(r, groups, &rep)
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	if err := runOnce(ctx, ident, wfs, tbl, c, r, groups, &rep); err != nil {
		return rep, fmt.Errorf("compact %s: %w", rep.Table, err)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// countDue counts the files and bytes groups would rewrite, into rep (a
// dry run).
func countDue(r *rewrite, groups []rewriteGroup, rep *CompactReport) {
	for _, g := range groups {
		for _, p := range g.paths {
			rep.FilesRewritten++
			rep.BytesRewritten += r.files[p].FileSizeBytes()
		}
	}
}

// runOnce does the rewrite r of groups of tbl and commits it as an
// ordinary optimistic commit (CompactOnce, TierOnce), into rep.
func runOnce(ctx context.Context, ident table.Identifier, wfs icebergio.WriteFileIO, tbl *table.Table, c tiering.CompactConfig, r *rewrite, groups []rewriteGroup, rep *CompactReport) error {
	if err := r.run(ctx, wfs, tbl, c, groups); err != nil {
		return err
	}
	props := icego.Properties{PropCompaction: strconv.Itoa(len(r.oldData)), PropCommitID: uuid.NewString()}
	if r.tier {
		props[PropTiering] = strconv.Itoa(len(r.oldData))
	}
	txn := tbl.NewTransaction()
	if err := stageRewrite(txn, r, tbl.CurrentSnapshot().SequenceNumber, props, r.dvs).Commit(ctx); err != nil {
		r.discard(wfs)
		return err
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit (its files are kept: the outcome may be unknown): %w", err)
	}
	// Readers without a catalog follow version-hint.text.
	(&icebergTable{ident: ident, fs: wfs}).committedTo(out)
	rep.DataFilesAfter, rep.DeleteFilesAfter, _, _ = liveCounts(out)
	rep.FilesRewritten, rep.FilesWritten = len(r.oldData), len(r.newData)
	rep.BytesRewritten, rep.BytesWritten = r.bytesRead, r.written
	return nil
}
