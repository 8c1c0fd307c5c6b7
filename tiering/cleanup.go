package tiering

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Cleanup is the files of expired snapshots not deleted yet. Nothing
// references them any more, so nothing else would find them (but orphan
// file cleanup): Run tries again.
type Cleanup struct {
	table   string
	pre     *table.Table // the table before the expiry, to list the files from (nil once listed)
	expired []int64      // the snapshots expired
	listed  bool         // paths is the list (else it must be made)
	paths   []string     // the files still to delete
	err     error        // why the last Run left files
}

// Err is why the last Run left files, nil when it deleted them all.
func (c *Cleanup) Err() error { return c.err }

// Run lists (once) and deletes the files only the expired snapshots
// referenced. current is the table now: files its snapshots still
// reference are kept. A file already gone counts as deleted.
func (c *Cleanup) Run(ctx context.Context, current *table.Table) error {
	fsys, err := current.FS(ctx)
	if err != nil {
		c.err = fmt.Errorf("clean up expired snapshots of %s: %w", c.table, err)
		return c.err
	}
	if !c.listed {
		if c.paths, err = unreferenced(fsys, c.pre, current, c.expired); err != nil {
			c.err = fmt.Errorf("list the files of expired snapshots of %s: %w", c.table, err)
			return c.err
		}
		c.listed, c.pre = true, nil
	}
	var errs []error
	left := c.paths[:0]
	for _, p := range c.paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			left = append(left, p)
			errs = append(errs, err)
		}
	}
	c.paths = left
	if c.err = errors.Join(errs...); c.err != nil {
		c.err = fmt.Errorf("delete %d files of expired snapshots of %s: %w", len(left), c.table, c.err)
	}
	return c.err
}

// unreferenced lists the files only the expired snapshots of pre
// referenced, as iceberg-go's own expiry does: their manifest lists and
// statistics files, their manifests that no kept snapshot has, and the
// files those list that no kept manifest lists as live.
func unreferenced(fsys icebergio.IO, pre, current *table.Table, expired []int64) ([]string, error) {
	gone := map[int64]bool{}
	files := map[string]bool{} // metadata files: manifest lists, manifests, statistics
	data := map[string]bool{}  // data and delete files
	for _, id := range expired {
		gone[id] = true
		if s := pre.Metadata().SnapshotByID(id); s != nil {
			files[s.ManifestList] = true
		}
	}
	for sf := range pre.Metadata().Statistics() {
		if gone[sf.SnapshotID] && sf.StatisticsPath != "" {
			files[sf.StatisticsPath] = true
		}
	}
	for sf := range pre.Metadata().PartitionStatistics() {
		if gone[sf.SnapshotID] && sf.StatisticsPath != "" {
			files[sf.StatisticsPath] = true
		}
	}
	keptManifests := map[string]bool{}
	var kept []icego.ManifestFile
	for _, s := range current.Metadata().Snapshots() {
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, err
		}
		for _, m := range mans {
			if !keptManifests[m.FilePath()] {
				keptManifests[m.FilePath()] = true
				kept = append(kept, m)
			}
		}
	}
	for _, id := range expired {
		s := pre.Metadata().SnapshotByID(id)
		if s == nil {
			continue
		}
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, err
		}
		for _, m := range mans {
			if keptManifests[m.FilePath()] || files[m.FilePath()] {
				continue
			}
			files[m.FilePath()] = true
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					return nil, err
				}
				data[e.DataFile().FilePath()] = true
			}
		}
	}
	// Only data and delete files can be shared with kept snapshots: read the
	// kept manifests only when there are such files.
	for _, m := range kept {
		if len(data) == 0 {
			break
		}
		for e, err := range m.Entries(fsys, false) {
			if err != nil {
				return nil, err
			}
			if e.Status() != icego.EntryStatusDELETED {
				delete(data, e.DataFile().FilePath())
			}
		}
	}
	maps.Copy(files, data)
	for sf := range current.Metadata().Statistics() {
		delete(files, sf.StatisticsPath)
	}
	for sf := range current.Metadata().PartitionStatistics() {
		delete(files, sf.StatisticsPath)
	}
	out := make([]string, 0, len(files))
	for f := range files {
		out = append(out, f)
	}
	slices.Sort(out)
	return out, nil
}
