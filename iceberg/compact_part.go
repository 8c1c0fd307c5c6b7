package iceberg

import (
	"context"
	"fmt"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// Compaction of a partitioned mirror. Its data files are merged per spec
// and partition (planRewrite's groups), so a new file holds rows of one
// partition; a position delete applies only to data files of its own
// spec and partition, so the deletes a compaction writes (those of files
// it did not rewrite, and those the stream committed since its snapshot,
// moved to the rows' new places) are written one delete file per spec and
// partition of the data files they point at, as a flush writes its own.

// writeDeletesOf writes dels (sorted by path and position) of tbl: one
// delete file when no spec of tbl was ever partitioned, else one per spec
// and partition refOf gives their data files; on a v3 table one deletion
// vector per data file (dels must then hold every deleted row of each
// file named). On error it removes what it wrote.
func writeDeletesOf(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, dels []posDelete, refOf func(path string) (fileRef, error), opts parquetx.Options) ([]icego.DataFile, error) {
	if tbl.Metadata().Version() >= 3 {
		return writeDVsOf(ctx, fs, tbl, dels, refOf, nil)
	}
	if neverPartitioned(tbl) {
		df, err := writePositionDeletes(ctx, fs, dataPath(tbl, ""), tbl.Schema(), tbl.Spec(), nil, dels, opts)
		if err != nil {
			return nil, err
		}
		return []icego.DataFile{df}, nil
	}
	groups, err := groupDeletes(tbl, dels, refOf)
	if err != nil {
		return nil, err
	}
	return writeDeleteGroups(ctx, fs, tbl, groups, opts)
}

// fileRef is the spec and partition of path, a data file of the snapshot
// the rewrite read.
func (r *rewrite) fileRef(path string) (fileRef, error) {
	df, ok := r.files[path]
	if !ok {
		return fileRef{}, fmt.Errorf("a position delete points at %s, which is not a data file of the snapshot compacted", path)
	}
	return refOf(df), nil
}

// fileRefOf is the spec and partition of path, a live data file of the
// mirror (see groupDeletes).
func (m *mirror) fileRefOf(path string) (fileRef, error) {
	groups, err := m.groupDeletes([]posDelete{{path: path}}, nil)
	if err != nil {
		return fileRef{}, err
	}
	return groups[0].ref, nil
}
