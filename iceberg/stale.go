package iceberg

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// StaleTable is an Iceberg table whose catalog entry is behind commits
// the slot has confirmed: under the table's location there is a metadata
// file newer than the catalog's, written from this source, whose
// watermark is above the catalog's and at or below the slot's confirmed
// position. That commit happened and was acknowledged, and the catalog no
// longer points at it: the catalog was restored from an older copy (or
// lost its last commits). The stream resumes at the confirmed position, so
// streaming on top would leave out what lies between and fork the table's
// history.
//
// Neither of the two look-alikes counts. An idle table's watermark stays
// below the confirmed position (the bridge acknowledges the server's WAL
// end while nothing is pending), but no newer metadata file exists. A
// commit that failed or was killed leaves a newer metadata file, but its
// watermark was never acknowledged: it is above the confirmed position.
type StaleTable struct {
	RelID     uint32 // the source table (0 when not known)
	Table     string // namespace.table
	Current   string // the metadata file the catalog points at
	Watermark decode.LSN
	// Newer is the newest such metadata file and NewerLSN its watermark.
	Newer    string
	NewerLSN decode.LSN
	// Repairable reports that Newer's current snapshot's files exist:
	// pg2iceberg repair (for a SQL catalog) can point the catalog at the
	// newest valid metadata file. Missing says what is missing otherwise.
	Repairable bool
	Missing    string
}

// Describe says what is wrong, in one line.
func (s StaleTable) Describe(slot string, confirmed decode.LSN) string {
	return fmt.Sprintf("%s: the catalog points at %s (watermark %s), but the table's metadata has %s, this bridge's commit up to %s, which slot %s confirmed (%s)",
		s.Table, path.Base(s.Current), s.Watermark, path.Base(s.Newer), s.NewerLSN, slot, confirmed)
}

// FindStale reports whether tbl, as the catalog loaded it, is behind a
// commit of source (any source when "") that the slot confirmed up to
// confirmed (see StaleTable); nil when it is not. It lists the table's
// metadata directory once and reads only the metadata files newer than
// the catalog's.
func FindStale(ctx context.Context, tbl *table.Table, source string, confirmed decode.LSN) (*StaleTable, error) {
	wm, _, err := Watermark(tbl, source)
	if err != nil {
		return nil, err
	}
	if wm >= confirmed {
		return nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	location := strings.TrimSuffix(tbl.Location(), "/")
	files, err := metadataFiles(fsys, location+"/metadata")
	if err != nil {
		return nil, err
	}
	current, known := metadataVersion(tbl.MetadataLocation())
	for _, f := range files { // newest first
		if known && f.version <= current {
			break
		}
		if f.location == tbl.MetadataLocation() {
			continue
		}
		other, err := table.NewFromLocation(ctx, tbl.Identifier(), f.location, func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
		if err != nil || strings.TrimSuffix(other.Location(), "/") != location {
			continue // unreadable, or another table's
		}
		w, _, err := Watermark(other, source)
		if err != nil || w <= wm || w > confirmed {
			continue // another source's; not ahead; or never acknowledged
		}
		st := &StaleTable{Table: strings.Join(tbl.Identifier(), "."), Current: tbl.MetadataLocation(), Watermark: wm,
			Newer: f.location, NewerLSN: w, Repairable: true}
		if err := currentFilesExist(other, fsys); err != nil {
			st.Repairable, st.Missing = false, err.Error()
		}
		return st, nil
	}
	return nil, nil
}

// Stale returns the tables of the sink that are behind what the slot
// confirmed (see StaleTable), by name.
func (s *Sink) Stale(ctx context.Context, confirmed decode.LSN) ([]StaleTable, error) {
	var out []StaleTable
	for id, st := range s.tables {
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil {
				continue
			}
			found, err := FindStale(ctx, t.tbl, s.cfg.Source.String(), confirmed)
			if err != nil {
				return nil, fmt.Errorf("check %s against the slot: %w", t.name(), err)
			}
			if found != nil {
				found.RelID = id
				out = append(out, *found)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out, nil
}

// ResumeChangelogAt moves the stale changelog of relID on to lsn, the
// slot's confirmed position where the stream resumes: the changes between
// its watermark and lsn are in a metadata file the catalog no longer
// points at. The resync row that marks the gap comes with the mirror's
// copy (FinishCopy), committed at lsn; a table without a mirror gets it
// here.
func (s *Sink) ResumeChangelogAt(ctx context.Context, relID uint32, lsn decode.LSN) error {
	st, ok := s.tables[relID]
	if !ok || st.changelog == nil {
		return nil
	}
	st.changelog.watermark = max(st.changelog.watermark, lsn)
	if st.mirror != nil {
		return nil
	}
	return s.recordResync(ctx, st, lsn)
}
