package iceberg

import (
	"context"
	"fmt"
	"math"

	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

// A v3 mirror's flush that deletes rows of its own new data files (an
// insert deleted or updated again before the flush) cannot name them in a
// deletion vector: iceberg-go refuses a DV of a data file the same commit
// adds ("referenced data files missing"). Those files are written again
// without the dead rows instead, before the commit, and the key index (and
// a speculation's deletes of their rows) move to the rows' new positions.

// dropOwnDeletes rewrites the files of data (this flush's) that the
// flush's deletes name without the deleted rows, takes those deletes out
// of m.deletes and returns data with the new files in place of the old
// (a file left with no rows is dropped).
func (m *mirror) dropOwnDeletes(ctx context.Context, data []icego.DataFile) ([]icego.DataFile, error) {
	own := make(map[string]bool, len(data))
	for _, df := range data {
		own[df.FilePath()] = true
	}
	dead := map[string]map[int64]bool{}
	kept := m.deletes[:0]
	for _, d := range m.deletes {
		if !own[d.path] {
			kept = append(kept, d)
			continue
		}
		if dead[d.path] == nil {
			dead[d.path] = map[int64]bool{}
		}
		dead[d.path][d.pos] = true
	}
	m.deletes = kept
	if len(dead) == 0 {
		return data, nil
	}
	ids := map[string]int32{}
	for id, p := range m.index.Files() {
		if own[p] {
			ids[p] = int32(id)
		}
	}
	out := make([]icego.DataFile, 0, len(data))
	moved := map[int32][]keyindex.Loc{}
	for _, df := range data {
		if dead[df.FilePath()] == nil {
			out = append(out, df)
			continue
		}
		nf, locs, err := m.rewriteOwn(ctx, df, dead[df.FilePath()])
		if err != nil {
			return nil, err
		}
		removeFile(m.fs, df.FilePath())
		if nf != nil {
			out = append(out, nf)
		}
		moved[ids[df.FilePath()]] = locs
		m.movePeerDeletes(df.FilePath(), nf, locs)
	}
	if _, ok := m.index.Remap(moved); !ok {
		return nil, fmt.Errorf("%s: the key index does not match this flush's rewritten files", m.name())
	}
	return out, nil
}

// rewriteOwn writes df's rows but the dead ones into one new file of its
// spec and partition (nil: every row was dead) and returns where each old
// row went (File -1: dropped) as key index locations.
func (m *mirror) rewriteOwn(ctx context.Context, df icego.DataFile, dead map[int64]bool) (icego.DataFile, []keyindex.Loc, error) {
	spec := m.tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil, nil, fmt.Errorf("%s: data file %s of partition spec %d, which the table does not have", m.name(), df.FilePath(), df.SpecID())
	}
	o := &rewriteOut{fs: m.fs, tbl: m.tbl, dir: partitionPath(*spec, m.tbl.Schema(), df.Partition()), spec: *spec, partition: df.Partition(), target: math.MaxInt64}
	if id := df.SortOrderID(); id != nil {
		o.sortID = *id
	}
	defer o.abort()
	rows, err := o.copyFile(ctx, df, dead)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.name(), err)
	}
	done, err := o.finish()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: rewrite %s: %w", m.name(), df.FilePath(), err)
	}
	var nf icego.DataFile
	newID := int32(-1)
	if len(done) == 1 {
		nf, newID = done[0], m.index.AddFile(done[0].FilePath())
	}
	locs := make([]keyindex.Loc, len(rows))
	for i, r := range rows {
		locs[i] = keyindex.Loc{File: -1}
		if r.file >= 0 {
			locs[i] = keyindex.Loc{File: newID, Pos: r.pos}
		}
	}
	return nf, locs, nil
}

// movePeerDeletes moves a speculation's deletes of rows of old, a file
// this flush rewrote into nf, to the rows' new positions (locs); a delete
// of a row the rewrite dropped is dropped too.
func (m *mirror) movePeerDeletes(old string, nf icego.DataFile, locs []keyindex.Loc) {
	if m.peer == nil {
		return
	}
	kept := m.peer.deletes[:0]
	for _, d := range m.peer.deletes {
		if d.path == old {
			if d.pos >= int64(len(locs)) || locs[d.pos].File < 0 {
				continue
			}
			d = posDelete{path: nf.FilePath(), pos: locs[d.pos].Pos}
		}
		kept = append(kept, d)
	}
	m.peer.deletes = kept
}
