package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Delete manifests: a mirror's flush with deletes adds one, and iceberg-go
// merges only data manifests (RewriteManifests, merge appends). Past
// MaxManifests the current snapshot's delete manifests are written into
// one per partition spec here: their live entries as EXISTING, each with
// its own snapshot id and data and file sequence numbers, so every delete
// applies to exactly the data files it applied to before. The snapshot is
// a replace with no file added or removed (the key index stays valid),
// committed through the catalog with the current snapshot asserted: a
// commit in between is a conflict, never a lost delete.

// MergeDeleteManifests merges the delete manifests of tbl's current
// snapshot when it has more than limit (0: MaxManifests); dry only says
// whether it would. It returns the table after the merge (tbl when none
// was committed) and the delete manifests before and after. An error
// means nothing was committed.
func MergeDeleteManifests(ctx context.Context, cat catalog.Catalog, tbl *table.Table, limit int, dry bool) (_ *table.Table, before, after int, err error) {
	if limit <= 0 {
		limit = MaxManifests
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || tbl.Metadata().Version() < 2 {
		return tbl, 0, 0, nil
	}
	name := strings.Join(tbl.Identifier(), ".")
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return tbl, 0, 0, fmt.Errorf("merge delete manifests of %s: %w", name, err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return tbl, 0, 0, fmt.Errorf("merge delete manifests of %s: its file IO cannot write", name)
	}
	mans, err := snap.Manifests(fsys)
	if err != nil {
		return tbl, 0, 0, fmt.Errorf("merge delete manifests of %s: %w", name, err)
	}
	var keep []icego.ManifestFile
	bySpec := map[int32][]icego.ManifestFile{}
	for _, m := range mans {
		if m.ManifestContent() == icego.ManifestContentDeletes {
			bySpec[m.PartitionSpecID()] = append(bySpec[m.PartitionSpecID()], m)
			before++
		} else {
			keep = append(keep, m)
		}
	}
	if before <= limit {
		return tbl, before, before, nil
	}
	after = len(bySpec)
	if dry {
		return tbl, before, after, nil
	}
	m := &deleteMerge{tbl: tbl, fs: wfs, id: newSnapshotID(tbl)}
	defer func() {
		if err != nil {
			m.removeWritten()
		}
	}()
	for spec, group := range bySpec {
		mf, err := m.writeManifest(spec, group)
		if err != nil {
			return tbl, before, before, fmt.Errorf("merge delete manifests of %s: %w", name, err)
		}
		keep = append(keep, mf)
	}
	out, err := m.commit(ctx, cat, keep)
	if err != nil {
		return tbl, before, before, fmt.Errorf("merge delete manifests of %s: %w", name, err)
	}
	return out, before, after, nil
}

// deleteMerge is one MergeDeleteManifests's snapshot in the making.
type deleteMerge struct {
	tbl     *table.Table
	fs      icebergio.WriteFileIO
	id      int64    // the new snapshot's id
	written []string // the files written, removed when the commit fails
}

// newSnapshotID is a positive id no snapshot of tbl has.
func newSnapshotID(tbl *table.Table) int64 {
	for {
		id := rand.Int64()
		if id > 0 && tbl.Metadata().SnapshotByID(id) == nil {
			return id
		}
	}
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeManifest writes the live entries of the delete manifests group (of
// partition spec spec) into one new manifest, as EXISTING entries.
func (m *deleteMerge) writeManifest(spec int32, group []icego.ManifestFile) (_ icego.ManifestFile, err error) {
	ps := m.tbl.Metadata().PartitionSpecByID(int(spec))
	if ps == nil {
		return nil, fmt.Errorf("no partition spec %d", spec)
	}
	path := m.tbl.Location() + "/metadata/" + uuid.NewString() + "-m0.avro"
	f, err := m.fs.Create(path)
	if err != nil {
		return nil, err
	}
	m.written = append(m.written, path)
	c := &counter{w: f}
	defer func() { err = errors.Join(err, f.Close()) }()
	w, err := icego.NewManifestWriter(m.tbl.Metadata().Version(), c, *ps, m.tbl.Schema(), m.id, icego.WithManifestWriterContent(icego.ManifestContentDeletes))
	if err != nil {
		return nil, err
	}
	for _, g := range group {
		for e, err := range g.Entries(m.fs, true) {
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", g.FilePath(), err)
			}
			if err := w.Existing(e); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.ToManifestFile(path, c.n, icego.WithManifestFileContent(icego.ManifestContentDeletes))
}

// commit writes the manifest list of mans and commits it as a replace
// snapshot on top of the table's current one.
func (m *deleteMerge) commit(ctx context.Context, cat catalog.Catalog, mans []icego.ManifestFile) (*table.Table, error) {
	meta, parent := m.tbl.Metadata(), m.tbl.CurrentSnapshot()
	seq := meta.LastSequenceNumber() + 1
	path := fmt.Sprintf("%s/metadata/snap-%d-0-%s.avro", m.tbl.Location(), m.id, uuid.NewString())
	f, err := m.fs.Create(path)
	if err != nil {
		return nil, err
	}
	m.written = append(m.written, path)
	err = icego.WriteManifestList(meta.Version(), f, m.id, &parent.SnapshotID, &seq, 0, mans)
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, err
	}
	props := icego.Properties{"manifests-replaced": strconv.Itoa(len(mans))}
	if parent.Summary != nil {
		for k, v := range parent.Summary.Properties {
			if strings.HasPrefix(k, "total-") {
				props[k] = v
			}
		}
	}
	schemaID := meta.CurrentSchema().ID
	snap := table.Snapshot{
		SnapshotID: m.id, ParentSnapshotID: &parent.SnapshotID, SequenceNumber: seq,
		TimestampMs: time.Now().UnixMilli(), ManifestList: path, SchemaID: &schemaID,
		Summary: &table.Summary{Operation: table.OpReplace, Properties: props},
	}
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()), table.AssertRefSnapshotID(table.MainBranch, &parent.SnapshotID)}
	updates := []table.Update{table.NewAddSnapshotUpdate(&snap), table.NewSetSnapshotRefUpdate(table.MainBranch, m.id, table.BranchRef, -1, -1, -1)}
	if _, _, err := cat.CommitTable(ctx, m.tbl.Identifier(), reqs, updates); err != nil {
		// Unknown outcome or a conflict: the files go only when the table,
		// reloaded, does not have the snapshot (else orphan cleanup finds
		// them, or they are the table's).
		now, lerr := cat.LoadTable(ctx, m.tbl.Identifier())
		if lerr != nil || now.Metadata().SnapshotByID(m.id) != nil {
			m.written = nil
		}
		if lerr == nil && now.Metadata().SnapshotByID(m.id) != nil {
			return now, nil
		}
		return nil, err
	}
	m.written = nil // named by the table now
	out, err := cat.LoadTable(ctx, m.tbl.Identifier())
	if err != nil {
		return nil, fmt.Errorf("committed; reloading failed: %w", err)
	}
	return out, nil
}

// removeWritten deletes the files of a merge that did not commit.
func (m *deleteMerge) removeWritten() {
	for _, p := range m.written {
		_ = m.fs.Remove(p)
	}
}
