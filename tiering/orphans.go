package tiering

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Orphan-file cleanup: files under a table's location that no metadata
// references (a commit that failed or was killed, a killed copy, expiry
// deletes given up on, metadata files past the table's log). iceberg-go's
// Table.PlanOrphanFiles finds them (every snapshot's manifest lists,
// manifests, data and delete files, the metadata log, statistics files
// and the version hint count as referenced); the files the bridge keeps
// beside the metadata (Keep: the key index) are taken out of its plan,
// and the rest are deleted here, so that each can be counted and a
// failure named.

// DefaultOrphanAge is how old an unreferenced file must be to be removed:
// Iceberg's own default, 3 days. A younger file may belong to a commit
// still in flight.
const DefaultOrphanAge = 72 * time.Hour

// OrphanOptions says which unreferenced files RemoveOrphans removes.
type OrphanOptions struct {
	// OlderThan: only files last modified longer ago than this (0: none
	// is too young; see DefaultOrphanAge).
	OlderThan time.Duration
	// Keep are paths under the table's location ("/metadata/...") that
	// no metadata references and that must stay (the key index).
	Keep []string
	// DryRun finds the orphans and removes nothing.
	DryRun bool
	// Roots are locations outside the table's that hold its files and
	// only its files (a tiered table's cold root, see TierConfig.ColdRoot):
	// their unreferenced files are orphans too.
	Roots []string
}

// Orphans is what RemoveOrphans found and removed.
type Orphans struct {
	Found        int      // unreferenced files old enough
	FoundBytes   int64    // their size
	Removed      int      // of them deleted (0 when dry)
	RemovedBytes int64    // their size
	Paths        []string // the files found, sorted
}

// planOrphans returns the unreferenced files under tbl's location and
// opts.Roots (a root not there yet has none).
func planOrphans(ctx context.Context, tbl *table.Table, opts OrphanOptions) ([]table.OrphanFile, error) {
	var found []table.OrphanFile
	for i := -1; i < len(opts.Roots); i++ {
		o := []table.OrphanCleanupOption{table.WithFilesOlderThan(opts.OlderThan)}
		if i >= 0 {
			o = append(o, table.WithLocation(opts.Roots[i]))
		}
		plan, err := tbl.PlanOrphanFiles(ctx, o...)
		if i >= 0 && errors.Is(err, fs.ErrNotExist) {
			continue // no file moved there yet
		}
		if err != nil {
			return nil, err
		}
		found = append(found, plan.OrphanFiles()...)
	}
	return found, nil
}

// RemoveOrphans finds and (unless opts.DryRun) deletes tbl's orphan files.
// A file already gone counts as removed; files that cannot be deleted are
// named in the error, the others are deleted all the same.
func RemoveOrphans(ctx context.Context, tbl *table.Table, opts OrphanOptions) (Orphans, error) {
	name := strings.Join(tbl.Identifier(), ".")
	found, err := planOrphans(ctx, tbl, opts)
	if err != nil {
		return Orphans{}, fmt.Errorf("find orphan files of %s: %w", name, err)
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	keep := map[string]bool{}
	for _, k := range opts.Keep {
		keep[loc+k] = true
	}
	var out Orphans
	var files []table.OrphanFile
	for _, f := range found {
		if keep[f.Path] || keep[strings.TrimPrefix(f.Path, "file://")] || keep["file://"+f.Path] {
			continue
		}
		files = append(files, f)
		out.Found++
		out.FoundBytes += f.SizeBytes
		out.Paths = append(out.Paths, f.Path)
	}
	slices.Sort(out.Paths)
	if opts.DryRun || len(files) == 0 {
		return out, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("remove orphan files of %s: %w", name, err)
	}
	var errs []error
	for _, f := range files {
		if err := fsys.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		out.Removed++
		out.RemovedBytes += f.SizeBytes
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("remove %d orphan files of %s: %w", len(errs), name, err)
	}
	return out, nil
}
