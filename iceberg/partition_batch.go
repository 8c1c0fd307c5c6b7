package iceberg

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// switchOpen parks cur, the open file of partition curKey (when open),
// in parked and takes the one of key out of it, if there is one: a
// writer's move to the partition of its next row.
func switchOpen[T any](parked *map[string]T, cur T, open bool, curKey, key string) (T, bool) {
	if open {
		if *parked == nil {
			*parked = map[string]T{}
		}
		(*parked)[curKey] = cur
	}
	next, ok := (*parked)[key]
	delete(*parked, key)
	return next, ok
}

// openFile is a batch's open data file of one partition and its file id
// in the key index.
type openFile struct {
	fw *fileWriter
	id int32
}

// closePending closes the batch's current open data file; the next row
// of its partition starts a new one. The flush commits both.
func (b *batch) closePending() error {
	if err := b.closeFile(b.pending, b.pendingID); err != nil {
		return err
	}
	b.pending = nil
	return nil
}

// closeFile closes fw, the batch's data file id, and moves what points at
// its rows to where its sort put them (see resorted).
func (b *batch) closeFile(fw *fileWriter, id int32) error {
	df, err := fw.close()
	if err != nil {
		return err
	}
	b.resorted(fw, id)
	b.closed = append(b.closed, df)
	return nil
}

// rotate closes every open data file of the batch (so their rows can be
// read back, or before a schema change); the next row of each partition
// starts a new file. The flush commits them all.
func (b *batch) rotate() error {
	if b.pending != nil {
		if err := b.closePending(); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.parked)) {
		if err := b.closeFile(b.parked[k].fw, b.parked[k].id); err != nil {
			return err
		}
		delete(b.parked, k)
	}
	return nil
}

// abortOpen abandons the batch's open data files (see fileWriter.abort).
func (b *batch) abortOpen() {
	if b.pending != nil {
		b.pending.abort()
		b.pending = nil
	}
	for k, f := range b.parked {
		f.fw.abort()
		delete(b.parked, k)
	}
}

// hasOpen reports whether the batch has an open data file.
func (b *batch) hasOpen() bool { return b.pending != nil || len(b.parked) > 0 }

// isOpen reports whether file id is one of the batch's open data files.
func (b *batch) isOpen(id int32) bool {
	if b.pending != nil && b.pendingID == id {
		return true
	}
	for _, f := range b.parked {
		if f.id == id {
			return true
		}
	}
	return false
}

// openBytes estimates the size of the batch's open data files.
func (b *batch) openBytes() int64 {
	var n int64
	if b.pending != nil {
		n += b.pending.bytes()
	}
	for _, f := range b.parked {
		n += f.fw.bytes()
	}
	return n
}

// fileRef is the spec and partition of a data file: where the position
// deletes of its rows go.
type fileRef struct {
	spec      int
	partition map[int]any
}

// refOf is df's fileRef.
func refOf(df icego.DataFile) fileRef {
	return fileRef{spec: int(df.SpecID()), partition: df.Partition()}
}

// noteFiles records the spec and partition of data files committed.
func (m *mirror) noteFiles(data []icego.DataFile) {
	if m.onlyUnpartitioned() {
		return
	}
	if m.files == nil {
		m.files = map[string]fileRef{}
	}
	for _, df := range data {
		m.files[df.FilePath()] = refOf(df)
	}
}

// onlyUnpartitioned reports whether every spec the table ever had is
// unpartitioned: then every delete file goes under the current spec.
func (m *mirror) onlyUnpartitioned() bool { return neverPartitioned(m.tbl) }

// neverPartitioned reports whether every spec tbl ever had is
// unpartitioned.
func neverPartitioned(tbl *table.Table) bool {
	for _, s := range tbl.Metadata().PartitionSpecs() {
		if !s.IsUnpartitioned() {
			return false
		}
	}
	return true
}

// deleteGroup is the position deletes of one spec and partition.
type deleteGroup struct {
	ref  fileRef
	dels []posDelete
}

// writeDeletes writes this flush's position deletes (data: its data
// files): one delete file per spec and partition of the data files they
// point at, written under that spec and partition. Iceberg applies a
// position delete only to data files of its own partition (and planners
// prune delete files by it), so a delete of a row in a file of an older
// spec or another partition than the row's new one must go there.
func (m *mirror) writeDeletes(ctx context.Context, data []icego.DataFile) ([]icego.DataFile, error) {
	if len(m.deletes) == 0 {
		return nil, nil
	}
	sortDeletes(m.deletes)
	opts, _ := m.fileLayout()
	if m.onlyUnpartitioned() {
		df, err := writePositionDeletes(ctx, m.fs, dataPath(m.tbl, ""), m.tbl.Schema(), m.tbl.Spec(), nil, m.deletes, opts)
		if err != nil {
			return nil, err
		}
		return []icego.DataFile{df}, nil
	}
	groups, err := m.deleteGroups(data)
	if err != nil {
		return nil, err
	}
	return writeDeleteGroups(ctx, m.fs, m.tbl, groups, opts)
}

// writeDeleteGroups writes one position delete file for each group,
// under the group's spec and partition. On error it removes what it
// wrote.
func writeDeleteGroups(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, groups []deleteGroup, opts parquetx.Options) ([]icego.DataFile, error) {
	var out []icego.DataFile
	for _, g := range groups {
		spec := tbl.Metadata().PartitionSpecByID(g.ref.spec)
		if spec == nil {
			return nil, fmt.Errorf("%s: position deletes for files of partition spec %d, which the table does not have", strings.Join(tbl.Identifier(), "."), g.ref.spec)
		}
		df, err := writePositionDeletes(ctx, fs, dataPath(tbl, partitionPath(*spec, tbl.Schema(), g.ref.partition)), tbl.Schema(), *spec, g.ref.partition, g.dels, opts)
		if err != nil {
			for _, d := range out {
				removeFile(fs, d.FilePath())
			}
			return nil, err
		}
		out = append(out, df)
	}
	return out, nil
}

// deleteGroups groups this flush's position deletes (sorted by path) by
// the spec and partition of their data files: data (this flush's),
// those recorded (noteFiles), and, for a file neither knows (written
// before a restart, by compaction or by another writer), the table's
// current snapshot.
func (m *mirror) deleteGroups(data []icego.DataFile) ([]deleteGroup, error) {
	refs := map[string]fileRef{}
	for _, df := range data {
		refs[df.FilePath()] = refOf(df)
	}
	return m.groupDeletes(m.deletes, refs)
}

// groupDeletes groups dels (sorted by path) by the spec and partition of
// their data files: refs, those recorded (noteFiles), and, for a file
// neither knows, the table's current snapshot.
func (m *mirror) groupDeletes(dels []posDelete, refs map[string]fileRef) ([]deleteGroup, error) {
	return groupDeletes(m.tbl, dels, m.refLookup(refs))
}

// refLookup returns the spec and partition of a data file of the mirror:
// from refs, those recorded (noteFiles), and, for a file neither knows,
// the table's current snapshot (read once).
func (m *mirror) refLookup(refs map[string]fileRef) func(path string) (fileRef, error) {
	loaded := false
	return func(path string) (fileRef, error) {
		ref, ok := refs[path]
		if !ok {
			ref, ok = m.files[path]
		}
		if !ok && !loaded {
			if err := m.loadFileRefs(); err != nil {
				return fileRef{}, err
			}
			loaded = true
			ref, ok = m.files[path]
		}
		if !ok {
			return fileRef{}, fmt.Errorf("%s: a position delete points at %s, which is not a live data file of the table", m.name(), path)
		}
		return ref, nil
	}
}

// groupDeletes groups dels (sorted by path) of tbl by the spec and
// partition refOf gives their data files.
func groupDeletes(tbl *table.Table, dels []posDelete, refOf func(path string) (fileRef, error)) ([]deleteGroup, error) {
	byKey := map[string]int{}
	var groups []deleteGroup
	err := eachFileRun(dels, refOf, func(path string, ref fileRef, run []posDelete) error {
		k := strconv.Itoa(ref.spec) + "/" + partitionKey(tbl.Metadata().PartitionSpecByID(ref.spec), ref.partition)
		g, seen := byKey[k]
		if !seen {
			g = len(groups)
			byKey[k] = g
			groups = append(groups, deleteGroup{ref: ref})
		}
		groups[g].dels = append(groups[g].dels, run...)
		return nil
	})
	return groups, err
}

// eachFileRun calls fn for each data file's run of dels (sorted by path),
// with the spec and partition refOf gives the file.
func eachFileRun(dels []posDelete, refOf func(path string) (fileRef, error), fn func(path string, ref fileRef, run []posDelete) error) error {
	for i := 0; i < len(dels); {
		path := dels[i].path
		j := i
		for j < len(dels) && dels[j].path == path {
			j++
		}
		ref, err := refOf(path)
		if err != nil {
			return err
		}
		if err := fn(path, ref, dels[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// loadFileRefs records the spec and partition of every live data file of
// the table's current snapshot.
func (m *mirror) loadFileRefs() error {
	data, _, err := liveFiles(m.tbl, m.fs)
	if err != nil {
		return err
	}
	m.files = make(map[string]fileRef, len(data))
	for _, df := range data {
		m.files[df.FilePath()] = refOf(df)
	}
	return nil
}

// partitionKey names a partition of spec (nil: none).
func partitionKey(spec *icego.PartitionSpec, vals map[int]any) string {
	if spec == nil {
		return ""
	}
	var key strings.Builder
	for _, f := range spec.Fields() {
		fmt.Fprintf(&key, "%T:%v/", vals[f.FieldID], vals[f.FieldID])
	}
	return key.String()
}

// partitionPath is the directory of partition vals of spec under the
// table's data/, in Iceberg's field=value form ("" unpartitioned).
func partitionPath(spec icego.PartitionSpec, sc *icego.Schema, vals map[int]any) string {
	var parts []string
	for _, f := range spec.Fields() {
		v := "null"
		if x := vals[f.FieldID]; x != nil {
			if src, ok := sc.FindFieldByID(f.SourceID()); ok {
				v = f.Transform.ToHumanStrType(src.Type, x)
			} else {
				v = fmt.Sprint(x)
			}
		}
		parts = append(parts, url.PathEscape(f.Name)+"="+url.PathEscape(v))
	}
	return strings.Join(parts, "/")
}

// ownPartitioner is a partitioner of the mirror's current binding for a
// copy worker (partitioners keep scratch builders: one per goroutine).
func (m *mirror) ownPartitioner() (*partitioner, error) {
	sc := m.tbl.Schema()
	asc, err := tableArrowSchema(sc)
	if err != nil {
		return nil, err
	}
	return newPartitioner(m.tbl.Spec(), sc, asc, m.colIdx)
}

// openFor makes w.fw the open data file of row's partition, parking the
// one open before.
func (w *CopyWriter) openFor(row decode.Tuple) error {
	var vals map[int]any
	key := ""
	if w.part != nil {
		var err error
		if vals, key, err = w.part.partition(w.m.rel, row); err != nil {
			return fmt.Errorf("%s: key %s: %w", w.m.name(), w.m.keyText(row), err)
		}
	}
	if w.fw != nil && key == w.key {
		return nil
	}
	o, ok := switchOpen(&w.parked, copyOpen{fw: w.fw, keys: w.keys}, w.fw != nil, w.key, key)
	w.fw, w.keys, w.key = o.fw, o.keys, key
	if ok {
		return nil
	}
	fw, err := w.m.newFileIn(w.part, vals)
	if err != nil {
		return err
	}
	w.fw = fw
	return nil
}
