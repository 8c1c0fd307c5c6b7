package iceberg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// TierOnce moves one table's data files that are due to its cold location
// once, outside the stream (pg2iceberg maintain): the same policy and
// rewrite as the bridge's tiering, committed as CompactOnce commits. The
// policy is the table's properties, overridden by p (a configuration
// file's tiering: block; may be nil). Its report counts the files moved
// (FilesRewritten) and written under the cold location.
func TierOnce(ctx context.Context, cat catalog.Catalog, ident table.Identifier, p *mapping.TieringPolicy, dryRun bool) (CompactReport, error) {
	start := time.Now()
	rep := CompactReport{Table: strings.Join(ident, ".")}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("tier %s: %w", rep.Table, err)
	}
	rep.DataFilesBefore, rep.DeleteFilesBefore, _, _ = liveCounts(tbl)
	rep.DataFilesAfter, rep.DeleteFilesAfter = rep.DataFilesBefore, rep.DeleteFilesBefore
	c, err := TierConfigOf(tbl, p)
	switch {
	case err != nil:
		return rep, fmt.Errorf("tier: %w", err)
	case !c.Enabled():
		rep.Skipped = "tiering is off"
		return rep, nil
	case tbl.CurrentSnapshot() == nil:
		rep.Skipped = "the table has no snapshot"
		return rep, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return rep, fmt.Errorf("tier %s: file IO: %w", rep.Table, err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return rep, fmt.Errorf("tier %s: file IO cannot write", rep.Table)
	}
	r, groups, err := planTier(ctx, wfs, tbl, c, time.Now())
	if err != nil {
		return rep, fmt.Errorf("tier %s: %w", rep.Table, err)
	}
	if r == nil {
		rep.Skipped = "no file is due"
		return rep, nil
	}
	if dryRun {
		countDue(r, groups, &rep)
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	if err := runOnce(ctx, ident, wfs, tbl, tiering.CompactConfigOf(tbl.Properties()), r, groups, &rep); err != nil {
		return rep, fmt.Errorf("tier %s: %w", rep.Table, err)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}
