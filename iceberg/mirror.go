package iceberg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

// mirror applies row changes to a mirror table with position deletes.
type mirror struct {
	*icebergTable
	rel     *decode.Relation
	colIdx  []int // relation column → top-level field of the table schema (-1: none)
	unbound []int // fields no relation column fills: written as NULL
	keyCols []int // relation columns of the key (every bound one for a whole-row key)
	keyType []arrow.DataType
	keyIDs  []int        // field IDs of the key columns
	part    *partitioner // of the table's current spec; nil: unpartitioned
	// files are the spec and partition of data files by path, for the
	// position deletes of their rows (see deleteGroups).
	files map[string]fileRef
	// dvs are the live deletion vectors of a v3 mirror (see liveDVs).
	dvs dvState

	index *keyindex.Index // key → live row, and file id → path; includes rows of the pending file
	// indexDisk is where the index spills past its memory budget (see
	// KeyIndexConfig); the zero value keeps it in memory.
	indexDisk KeyIndexConfig

	batch                    // this flush's changes
	lastEnd decode.LSN       // end LSN of the last transaction in this flush
	summary icego.Properties // extra snapshot summary properties of this flush's commit
	keyBuf  []byte

	// unknown are the keys of rows left out of the mirror because values
	// of theirs are not known (see unknown.go); recopyMarked: PropRecopy
	// was set for them; recopyAsked: the table is to be copied again.
	unknown                   map[string]struct{}
	recopyMarked, recopyAsked bool
}

// batch is changes of a mirror not yet committed: a flush's, or those of a
// streamed transaction applied ahead of its commit (see speculation).
type batch struct {
	pending    *fileWriter // open data file of the last row's partition, nil until the first row
	pendingID  int32       // its file id in the mirror's key index
	pendingKey string      // its partition (see partitioner.partition)
	// parked are the open data files of the other partitions this batch
	// wrote rows of, by partition.
	parked  map[string]openFile
	closed  []icego.DataFile // data files closed early (see rotate)
	deletes []posDelete
	// idx is where the batch records its rows (see rowIndex), and peer a
	// speculation's batch on the same mirror, whose deletes may name rows
	// of this batch's files (nil: none): what batch.resorted moves when a
	// sorted file closes.
	idx     rowIndex
	peer    *batch
	changes int // rows changed
	// truncated: every row committed before was deleted (TRUNCATE, a
	// re-copy). The commit removes the table's files instead of deleting
	// their rows one by one (see icebergTable.stageFiles).
	truncated bool
}

// rowIndex is where a batch looks up and records live rows: the mirror's
// key index, or an overlay on it (see keyindex.Overlay).
type rowIndex interface {
	Get(k string) (keyindex.Loc, bool)
	Set(k string, l keyindex.Loc)
	Del(k string)
}

func newMirror(t *icebergTable, rel *decode.Relation) (*mirror, error) {
	t.positional = true
	m := &mirror{icebergTable: t, rel: rel, index: keyindex.New()}
	if err := m.bind(); err != nil {
		return nil, err
	}
	return m, nil
}

// rebind binds the mirror to rel, the table's new shape (see
// Sink.Relation): an error, or a column its schema cannot hold yet.
func (m *mirror) rebind(rel *decode.Relation) error {
	m.rel = rel
	if err := m.bind(); err != nil {
		return err
	}
	return m.bindErr
}

// bind maps the relation's columns onto the table's current schema by
// name (see bindFields).
func (m *mirror) bind() error {
	sc := m.tbl.Schema()
	asc, err := tableArrowSchema(sc)
	if err != nil {
		return err
	}
	m.colIdx, m.unbound, err = bindFields(m.name(), m.rel, asc.Fields(), sc.Fields())
	if err := m.lenientBind(err); err != nil {
		return err
	}
	m.keyCols, m.keyType, m.keyIDs = nil, nil, nil
	for i, c := range m.rel.Columns {
		if (c.Key || m.rel.WholeRow) && m.colIdx[i] >= 0 {
			m.keyCols = append(m.keyCols, i)
			m.keyType = append(m.keyType, asc.Field(m.colIdx[i]).Type)
			m.keyIDs = append(m.keyIDs, sc.Fields()[m.colIdx[i]].ID)
		}
	}
	if len(m.keyCols) == 0 {
		return fmt.Errorf("%s: no key columns", m.name())
	}
	m.index.SetRepeats(m.rel.WholeRow)
	m.part, err = newPartitioner(m.tbl.Spec(), sc, asc, m.colIdx)
	if err != nil {
		return err
	}
	return m.attachDisk()
}

// key encodes the key of a tuple (full row or key-only image).
func (m *mirror) key(t decode.Tuple) (string, error) {
	b, err := m.appendKey(m.keyBuf[:0], t)
	if err != nil {
		return "", err
	}
	m.keyBuf = b
	return string(b), nil
}

// appendKey appends the key of a tuple to b (safe for concurrent use).
// Values come in text form, or in binary form from a binary copy (see
// keyindex.AppendBinary). A whole-row key is the digest of every value
// that is not NULL, each after its field ID (see keyindex.SealRow).
func (m *mirror) appendKey(b []byte, t decode.Tuple) ([]byte, error) {
	start := len(b)
	for j, i := range m.keyCols {
		d, c := t[i], &m.rel.Columns[i]
		if m.rel.WholeRow {
			if d.Kind == decode.Null {
				continue
			}
			b = binary.AppendUvarint(b, uint64(m.keyIDs[j]))
		}
		var err error
		switch d.Kind {
		case decode.Text:
			b, err = keyindex.AppendText(b, m.keyType[j], d.Data)
		case decode.Binary:
			b, err = keyindex.AppendBinary(b, m.keyType[j], c.TypeOID, d.Data)
		default:
			return nil, fmt.Errorf("%s: key column %s is %s in the change", m.name(), c.Name, kindName(d.Kind))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: column %s: %w", m.name(), c.Name, err)
		}
	}
	if m.rel.WholeRow {
		b = keyindex.SealRow(b, start)
	}
	return b, nil
}

// newDataFile opens a new data file for rows of the mirror in partition
// vals of its partitioner's spec (nil: unpartitioned), of the table's
// current settings (see dataFileLayout).
func (m *mirror) newDataFile(vals map[int]any) (*fileWriter, error) { return m.newFileIn(m.part, vals) }

// newFileIn is newDataFile for partition vals of p's spec (p nil:
// unpartitioned).
// Its rows are sorted by the table's sort order (see sortKeys), but for a
// whole-row key's mirror, whose rows repeat.
func (m *mirror) newFileIn(p *partitioner, vals map[int]any) (*fileWriter, error) {
	opts, target := m.dataFileLayout()
	sortID := 0
	if !m.rel.WholeRow {
		opts.Sort, sortID = sortKeys(m.tbl)
	}
	spec, dir := m.tbl.Spec(), ""
	if p != nil {
		spec, dir = p.spec, partitionPath(p.spec, m.tbl.Schema(), vals)
	}
	fw, err := newFileWriterWith(m.fs, dataPath(m.tbl, dir), m.tbl.Schema(), spec, vals, icego.EntryContentData, m.tbl.Properties(), opts, target)
	if err != nil {
		return nil, err
	}
	fw.sortID = sortID
	return fw, nil
}

// partitionOf returns a row's partition values and key under the table's
// current spec (nil, "": unpartitioned). A spec another writer set since
// the last bind (Spark's ADD PARTITION FIELD) is bound first.
func (m *mirror) partitionOf(row decode.Tuple) (map[int]any, string, error) {
	spec := m.tbl.Spec()
	if (m.part == nil) != spec.IsUnpartitioned() || (m.part != nil && m.part.spec.ID() != spec.ID()) {
		if err := m.bind(); err != nil {
			return nil, "", err
		}
	}
	if m.part == nil {
		return nil, "", nil
	}
	vals, key, err := m.part.partition(m.rel, row)
	if err != nil {
		return nil, "", fmt.Errorf("%s: key %s: %w", m.name(), m.keyText(row), err)
	}
	return vals, strconv.Itoa(spec.ID()) + "/" + key, nil
}

// openFor makes b.pending the open data file of row's partition, parking
// the one open before.
func (m *mirror) openFor(b *batch, row decode.Tuple) error {
	vals, key, err := m.partitionOf(row)
	if err != nil {
		return err
	}
	if b.pending != nil && key == b.pendingKey {
		return nil
	}
	f, ok := switchOpen(&b.parked, openFile{fw: b.pending, id: b.pendingID}, b.pending != nil, b.pendingKey, key)
	b.pending, b.pendingID, b.pendingKey = f.fw, f.id, key
	if ok {
		return nil
	}
	fw, err := m.newDataFile(vals)
	if err != nil {
		return err
	}
	b.pending, b.pendingID, b.pendingKey = fw, m.index.AddFile(fw.path), key
	return nil
}

// appendRow writes a full row's values to the builders of a file's
// top-level fields.
func (m *mirror) appendRow(builder func(int) array.Builder, row decode.Tuple) error {
	if m.bindErr != nil {
		return m.bindErr
	}
	if i, err := appendTuple(builder, m.colIdx, m.unbound, m.rel, row); err != nil {
		return fmt.Errorf("%s: column %s, key %s: %w", m.name(), m.rel.Columns[i].Name, m.keyText(row), err)
	}
	return nil
}

func kindName(k decode.Kind) string {
	switch k {
	case decode.Null:
		return "NULL"
	case decode.Unchanged:
		return "an unchanged TOAST value"
	case decode.Binary:
		return "binary"
	}
	return "text"
}

func (m *mirror) deleteKey(b *batch, idx rowIndex, k string) bool {
	l, ok := idx.Get(k)
	if !ok {
		return false
	}
	b.deletes = append(b.deletes, posDelete{path: m.index.Path(l.File), pos: l.Pos})
	idx.Del(k)
	return true
}

// insert writes a full row to b and indexes it.
func (m *mirror) insert(b *batch, idx rowIndex, row decode.Tuple, k string) error {
	if err := m.openFor(b, row); err != nil {
		return err
	}
	if err := m.appendRow(b.pending.builder, row); err != nil {
		return err
	}
	if !m.rel.WholeRow { // where rows repeat, an insert adds one
		m.deleteKey(b, idx, k) // an insert over a live key replaces it (replays, copy overlap)
	}
	idx.Set(k, keyindex.Loc{File: b.pendingID, Pos: b.pending.rows()})
	if b.pending.pw.Sorted() {
		b.idx = idx
		b.pending.keys.Push(append(b.pending.keys.Tail(), k...))
	}
	if err := b.pending.pw.RowDone(); err != nil {
		return err
	}
	if full(b.pending, b.pending.target) {
		// The next row opens a new file with a new file ID in the key
		// index; the flush commits every file of the batch (closed).
		return b.closePending()
	}
	return nil
}

// keyText renders a row's key for error messages.
func (m *mirror) keyText(row decode.Tuple) string {
	var parts []string
	for j, i := range m.keyCols {
		v := string(row[i].Data)
		if row[i].Kind == decode.Binary {
			v = binaryValueText(m.keyType[j], m.rel.Columns[i].TypeOID, row[i].Data)
		}
		parts = append(parts, m.rel.Columns[i].Name+"="+v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// apply applies one change to this flush; after is its new row with
// unchanged values resolved (see Sink.resolveAfter).
func (m *mirror) apply(c *decode.Change, after decode.Tuple) error {
	return m.applyTo(&m.batch, m.index, c, after)
}

// applyTo applies one change to batch b, whose live rows idx holds.
func (m *mirror) applyTo(b *batch, idx rowIndex, c *decode.Change, after decode.Tuple) error {
	b.changes++
	switch c.Op {
	case decode.Insert:
		k, err := m.key(c.After)
		if err != nil {
			return err
		}
		return m.insert(b, idx, c.After, k)
	case decode.Update:
		oldImage := c.Before
		if oldImage == nil {
			oldImage = after
		}
		oldKey, err := m.key(oldImage)
		if err != nil {
			return err
		}
		m.deleteKey(b, idx, oldKey)
		newKey, err := m.key(after)
		if err != nil {
			return err
		}
		return m.insert(b, idx, after, newKey)
	case decode.Delete:
		k, err := m.key(c.Before)
		if err != nil {
			return err
		}
		m.deleteKey(b, idx, k)
		return nil
	}
	return fmt.Errorf("%s: unexpected change %s", m.name(), c.Op)
}

// truncate deletes every live row: the flush's commit removes every file
// the table holds (see batch.truncated), and the files this flush wrote so
// far, which no commit names, are deleted now.
func (m *mirror) truncate() {
	m.changes++
	m.truncated = true
	m.abortOpen()
	for _, df := range m.closed {
		removeFile(m.fs, df.FilePath())
	}
	m.closed, m.deletes = nil, m.deletes[:0]
	m.index.Clear()
	m.unknown, m.recopyAsked = nil, false
}

// UnchangedToastError reports an UPDATE that left a TOASTed value unchanged
// when the bridge has no old image to take the value from.
type UnchangedToastError struct{ Table, Column string }

func (e *UnchangedToastError) Error() string {
	return fmt.Sprintf("%s: an UPDATE left the large value of column %s unchanged, the source did not send it and there is no mirror row to read it from; run ALTER TABLE %s REPLICA IDENTITY FULL so the old value arrives with the change", e.Table, e.Column, e.Table)
}

// closeFilesFunc returns m.closeFiles, or a no-op for a nil mirror.
func (m *mirror) closeFilesFunc() func() error {
	if m == nil {
		return func() error { return nil }
	}
	return m.closeFiles
}

// closeFiles closes the open data files, if any (before a schema change).
func (m *mirror) closeFiles() error { return m.rotate() }

// flush closes this flush's files and commits them in one snapshot.
func (m *mirror) flush(ctx context.Context, s *Sink) error {
	if m.changes == 0 {
		m.summary = nil
		return nil
	}
	if err := m.rotate(); err != nil {
		return err
	}
	data, dels, superseded, err := m.writeFlushDeletes(ctx, m.closed)
	if err != nil {
		return err
	}
	if err := m.markUnknownRows(ctx); err != nil {
		return err
	}
	if err := m.index.Err(); err != nil { // lookups failed: the deletes may be short
		return fmt.Errorf("%s: key index: %w", m.name(), err)
	}
	crashPoint("before-commit")
	prev := m.snapshotID()
	m.superseded = superseded
	err = m.commitFiles(ctx, s.cat, data, dels, m.truncated, m.lastEnd, s.cfg.Source.String(), m.summary)
	m.superseded = nil
	if errors.Is(err, errRowsMoved) {
		return m.dropBatch(ctx, s, append(data, dels...))
	}
	if err != nil {
		return err
	}
	m.noteFlush(dels, m.truncated)
	m.noteFiles(data)
	m.noteDVs(prev, dels, superseded)
	m.pending, m.closed, m.deletes, m.changes, m.summary, m.truncated = nil, nil, m.deletes[:0], 0, nil, false
	return nil
}

// dropBatch drops this flush's changes, whose position deletes point at
// rows an outside commit moved (see reconcile): the files written for it
// are deleted, the key index is rebuilt from the table's new snapshot and
// errRowsMoved is returned, for the stream to replay the changes (see
// ReplayError).
func (m *mirror) dropBatch(ctx context.Context, s *Sink, files []icego.DataFile) error {
	for _, df := range files {
		removeFile(m.fs, df.FilePath())
	}
	m.pending, m.closed, m.deletes, m.changes, m.summary, m.truncated = nil, nil, m.deletes[:0], 0, nil, false
	start := time.Now()
	if err := m.rebuildIndex(ctx); err != nil {
		if err := m.recopyForeign(ctx, err); err != nil {
			return err
		}
		s.recopy = append(s.recopy, m.rel.ID) // at the replay's first commit
	}
	if m.log != nil {
		m.log.Info("key index rebuilt after an outside commit", "table", m.name(), "rows", m.index.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return fmt.Errorf("%s: %w", m.name(), errRowsMoved)
}
