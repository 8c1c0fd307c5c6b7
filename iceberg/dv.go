package iceberg

import (
	"context"
	"fmt"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
)

// Format v3 mirrors: their deletes are deletion vectors (a Puffin file's
// deletion-vector-v1 blobs, one per data file), not position delete files.
// The spec allows one live DV per data file, so a flush deleting more rows
// of a file that has one writes a DV of the old positions and the new and
// its commit removes the old (RowDelta.RemoveDeletes).

// followFormatVersion upgrades the mirror to the configured format version
// (0: the table's own). An upgrade to 3 is a metadata change only: the
// position delete files the table holds stay live and are read as before;
// later deletes are deletion vectors. A v3 table configured as 2 is an
// error: Iceberg has no downgrade.
func (t *icebergTable) followFormatVersion(ctx context.Context, want int) error {
	have := t.tbl.Metadata().Version()
	switch {
	case want == 0 || want == have:
		return nil
	case want < have:
		return fmt.Errorf("%s: the configuration says format_version %d but the table is format version %d, and Iceberg cannot downgrade a table; set format_version: %d (or remove it) for this table", t.name(), want, have, have)
	}
	txn := t.tbl.NewTransaction()
	if err := txn.UpgradeFormatVersion(want); err != nil {
		return fmt.Errorf("upgrade %s to format version %d: %w", t.name(), want, err)
	}
	if t.log != nil {
		t.log.Info("table format version upgraded by the configuration", "table", t.name(), "from", have, "to", want)
	}
	return t.commitTxn(ctx, txn, "upgrade the format version of", nil)
}

// writeFlushDeletes writes this flush's deletes (data: its data files,
// returned as committed): deletion vectors on a v3 mirror, with the DVs
// they supersede, after its own files lost their dead rows (see
// dropOwnDeletes); else position delete files.
func (m *mirror) writeFlushDeletes(ctx context.Context, data []icego.DataFile) (_, dels, superseded []icego.DataFile, err error) {
	if !m.usesDVs() {
		dels, err = m.writeDeletes(ctx, data)
		return data, dels, nil, err
	}
	if data, err = m.dropOwnDeletes(ctx, data); err != nil {
		return nil, nil, nil, err
	}
	m.closed = data
	dels, superseded, err = m.writeDVs(ctx, data)
	return data, dels, superseded, err
}

// snapshotID is the id of the table's current snapshot (0: none).
func (t *icebergTable) snapshotID() int64 {
	if s := t.tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// usesDVs reports whether the mirror's deletes are deletion vectors.
func (m *mirror) usesDVs() bool { return m.tbl.Metadata().Version() >= 3 }

// dvState is a mirror's live deletion vectors by data file path, as of
// snapshot snap (see mirror.liveDVs).
type dvState struct {
	snap   int64
	byData map[string]icego.DataFile
	// older are the rows position delete files (of the table's v2 days)
	// delete, by data file: a reader takes a data file's DV alone when it
	// has one, so its first DV holds them too.
	older map[string]map[int64]bool
}

// liveDVs returns the live deletion vectors of the mirror's current
// snapshot by the data file they reference: the cache when it is of that
// snapshot (the mirror's own commits keep it), else read from the
// manifests.
func (m *mirror) liveDVs(ctx context.Context) (dvState, error) {
	snap := m.tbl.CurrentSnapshot()
	if snap == nil {
		return dvState{}, nil
	}
	if m.dvs.byData != nil && m.dvs.snap == snap.SnapshotID {
		return m.dvs, nil
	}
	_, dels, err := liveFiles(m.tbl, m.fs)
	if err != nil {
		return dvState{}, err
	}
	st := dvState{snap: snap.SnapshotID, byData: map[string]icego.DataFile{}, older: map[string]map[int64]bool{}}
	for _, df := range dels {
		switch {
		case table.IsDeletionVector(df) && df.ReferencedDataFile() != nil:
			st.byData[*df.ReferencedDataFile()] = df
		case df.ContentType() == icego.EntryContentPosDeletes:
			if err := readPosDeletes(ctx, m.fs, df, st.older); err != nil {
				return dvState{}, err
			}
		}
	}
	m.dvs = st
	return st, nil
}

// writeDVs writes this flush's deletes (data: its data files) as one
// Puffin file of one deletion vector per data file, each under its data
// file's spec and partition. A data file with a live DV gets one holding
// the old positions too; those old DVs are returned as superseded, for the
// commit to remove. After a TRUNCATE no DV of before is live.
func (m *mirror) writeDVs(ctx context.Context, data []icego.DataFile) (dvs, superseded []icego.DataFile, err error) {
	if len(m.deletes) == 0 {
		return nil, nil, nil
	}
	sortDeletes(m.deletes)
	var live dvState
	if !m.truncated {
		if live, err = m.liveDVs(ctx); err != nil {
			return nil, nil, err
		}
	}
	refs := map[string]fileRef{}
	for _, df := range data {
		refs[df.FilePath()] = refOf(df)
	}
	refFor := m.refLookup(refs)
	if m.onlyUnpartitioned() {
		refFor = func(string) (fileRef, error) { return fileRef{spec: m.tbl.Metadata().DefaultPartitionSpec()}, nil }
	}
	dvs, err = writeDVsOf(ctx, m.fs, m.tbl, m.deletes, refFor, func(w *dv.DVWriter, path string, ref fileRef) error {
		if old, ok := live.byData[path]; ok {
			bm, err := dv.ReadDV(m.fs, old)
			if err != nil {
				return fmt.Errorf("read the deletion vector of %s: %w", path, err)
			}
			w.Load(path, bm, int32(ref.spec), ref.partition)
			superseded = append(superseded, old)
			return nil
		}
		for pos := range live.older[path] {
			if err := w.AddPosition(path, pos, int32(ref.spec), ref.partition); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.name(), err)
	}
	return dvs, superseded, nil
}

// writeDVsOf writes dels (sorted by path) of tbl as one Puffin file of one
// deletion vector per data file, under the spec and partition refOf gives
// it; seed (may be nil) adds what the DV of a data file holds besides.
func writeDVsOf(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, dels []posDelete, refOf func(path string) (fileRef, error), seed func(w *dv.DVWriter, path string, ref fileRef) error) ([]icego.DataFile, error) {
	meta := tbl.Metadata()
	w := dv.NewDVWriter(fs, func(id int32) *icego.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	err := eachFileRun(dels, refOf, func(path string, ref fileRef, run []posDelete) error {
		if seed != nil {
			if err := seed(w, path, ref); err != nil {
				return err
			}
		}
		for _, d := range run {
			if err := w.AddPosition(path, d.pos, int32(ref.spec), ref.partition); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dvs, err := w.Flush(ctx, dvPath(tbl))
	if err != nil {
		return nil, fmt.Errorf("write deletion vectors: %w", err)
	}
	return dvs, nil
}

// noteDVs moves the DV cache to snapshot snap, which added dvs and removed
// superseded (the mirror's own commit); a cache of another snapshot is
// dropped.
func (m *mirror) noteDVs(prev int64, dvs, superseded []icego.DataFile) {
	snap := m.tbl.CurrentSnapshot()
	if m.dvs.byData == nil || m.dvs.snap != prev || snap == nil {
		m.dvs = dvState{}
		return
	}
	for _, df := range superseded {
		delete(m.dvs.byData, *df.ReferencedDataFile())
	}
	for _, df := range dvs {
		if table.IsDeletionVector(df) {
			m.dvs.byData[*df.ReferencedDataFile()] = df
		}
	}
	m.dvs.snap = snap.SnapshotID
}

// dvPath returns a new deletion vector file location in the table.
func dvPath(tbl *table.Table) string {
	return tbl.Location() + "/data/" + uuid.NewString() + "-dv.puffin"
}

// readDVInto adds the rows deletion vector df deletes to deleted (data
// file path → positions).
func readDVInto(fs icebergio.IO, df icego.DataFile, deleted map[string]map[int64]bool) error {
	ref := df.ReferencedDataFile()
	if ref == nil {
		return fmt.Errorf("deletion vector %s names no data file", df.FilePath())
	}
	bm, err := dv.ReadDV(fs, df)
	if err != nil {
		return fmt.Errorf("read deletion vector %s: %w", df.FilePath(), err)
	}
	set := deleted[*ref]
	if set == nil {
		set = make(map[int64]bool)
		deleted[*ref] = set
	}
	for p := range bm.Positions() {
		set[int64(p)] = true
	}
	return nil
}

// splitDVs moves a v3 table's deletion vectors out of r.oldDeletes into
// r.dvs: a DV goes with its data file, if rewritten, and else stays (see
// stageRewrite); the position delete files (of the table's v2 days) are
// all replaced, as on v2.
func (r *rewrite) splitDVs() {
	r.dvs = map[string]icego.DataFile{}
	pos := r.oldDeletes[:0:0]
	for _, df := range r.oldDeletes {
		if table.IsDeletionVector(df) && df.ReferencedDataFile() != nil {
			r.dvs[*df.ReferencedDataFile()] = df
		} else {
			pos = append(pos, df)
		}
	}
	r.oldDeletes = pos
}
