package iceberg

import (
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// A speculated changelog file (see specLog) is one row group of at most
// specRowGroupRows rows or about specRowGroupBytes of Arrow data; a
// speculation holding more than specMaxFiles of them is abandoned (each is
// an open file until the commit).
const (
	specRowGroupRows  = 512 * 1024
	specRowGroupBytes = 64 << 20
	specMaxFiles      = 16
)

// deferredWriter writes a Parquet data file whose last columns are known
// only when it is finished: a changelog file of a transaction applied
// before its commit, whose commit LSN and time come with the commit. The
// file holds one row group; its leading columns are encoded and written
// when the file is sealed, the late ones at finish. Parquet columns are
// matched to Iceberg fields by field ID, so their order in the file is
// free.
type deferredWriter struct {
	fs     icebergio.WriteFileIO
	path   string
	schema *icego.Schema
	spec   icego.PartitionSpec
	props  icego.Properties
	pw     *parquetx.ColumnWriter
	late   []arrow.Field        // written at finish, in file order
	bld    *array.RecordBuilder // the leading fields; nil once sealed
	rows   int
}

// newDeferredWriter opens a file of the table schema sc whose top-level
// fields named in late are written at finish. pos maps each top-level
// field of sc to its builder (-1 for a late field). opts are its Parquet
// settings.
func newDeferredWriter(fs icebergio.WriteFileIO, path string, sc *icego.Schema, spec icego.PartitionSpec, props icego.Properties, late []string, opts parquetx.Options) (d *deferredWriter, pos []int, err error) {
	asc, err := tableArrowSchema(sc)
	if err != nil {
		return nil, nil, err
	}
	var lead, tail []arrow.Field
	for _, f := range asc.Fields() {
		if slices.Contains(late, f.Name) {
			tail = append(tail, f)
			pos = append(pos, -1)
			continue
		}
		pos = append(pos, len(lead))
		lead = append(lead, f)
	}
	out, err := fs.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", path, err)
	}
	pw, err := parquetx.NewColumnWriterWith(arrow.NewSchema(append(slices.Clone(lead), tail...), nil), out, path, opts)
	if err != nil {
		_ = out.Close()
		return nil, nil, err
	}
	return &deferredWriter{
		fs: fs, path: path, schema: sc, spec: spec, props: props, pw: pw, late: tail,
		bld: array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(lead, nil)),
	}, pos, nil
}

// size estimates the Arrow bytes buffered.
func (d *deferredWriter) size() int64 {
	var n int64
	for _, b := range d.bld.Fields() {
		n += builderSize(b)
	}
	return n
}

func builderSize(b array.Builder) int64 {
	switch b := b.(type) {
	case *array.StructBuilder:
		n := int64(b.Len())
		for i := range b.NumField() {
			n += builderSize(b.FieldBuilder(i))
		}
		return n
	}
	n := 8 * int64(b.Len())
	if d, ok := b.(interface{ DataLen() int }); ok { // strings and binaries
		n += int64(d.DataLen())
	}
	return n
}

// seal encodes and writes the leading columns.
func (d *deferredWriter) seal() error {
	if d.bld == nil {
		return nil
	}
	rec := d.bld.NewRecordBatch()
	defer rec.Release()
	d.bld.Release()
	d.bld = nil
	if err := d.pw.NewRowGroup(); err != nil {
		return err
	}
	for i, col := range rec.Columns() {
		if err := d.pw.WriteColumn(i, col); err != nil {
			return err
		}
	}
	return nil
}

// finish writes the late columns, given in file order, and closes the file.
func (d *deferredWriter) finish(late []arrow.Array) (icego.DataFile, error) {
	if err := d.seal(); err != nil {
		return nil, err
	}
	lead := d.pw.NumColumns() - len(late)
	for i, a := range late {
		if err := d.pw.WriteColumn(lead+i, a); err != nil {
			return nil, err
		}
	}
	md, size, err := d.pw.Close()
	if err != nil {
		return nil, err
	}
	return describeFile(md, d.path, size, d.schema, d.spec, nil, icego.EntryContentData, d.props, 0)
}

// abort abandons the file and deletes it: no commit has named it.
func (d *deferredWriter) abort() {
	if d.bld != nil {
		d.bld.Release()
		d.bld = nil
	}
	d.pw.Abort()
	removeFile(d.fs, d.path)
}

// specLog is the changelog rows of a speculation for one table, in
// deferred files whose lsn and commit_ts columns are written at commit.
type specLog struct {
	c       *changelog
	day     int32 // the partition the files are for
	idx     [8]int
	cur     *deferredWriter
	sealed  []*deferredWriter
	changes int
}

func (l *specLog) append(op decode.Op, xid uint32, seq int64, before, after decode.Tuple) error {
	if l.cur == nil {
		if len(l.sealed) >= specMaxFiles {
			return fmt.Errorf("%s: more than %d rows: %w", l.c.name(), specMaxFiles*specRowGroupRows, errSpecUnsupported)
		}
		// The commit's LSN and time are written at the commit, so the files
		// can be partitioned by the guessed day of commit_ts only (checked
		// at the commit), or not at all.
		spec, sc := l.c.tbl.Spec(), l.c.tbl.Schema()
		if !dayOnly(spec, sc) {
			return fmt.Errorf("%s is partitioned by %s: %w", l.c.name(), spec, errSpecUnsupported)
		}
		dir := ""
		if !spec.IsUnpartitioned() {
			dir = partitionPath(spec, sc, map[int]any{spec.Field(0).FieldID: l.day})
		}
		opts, _ := l.c.fileLayout()
		d, pos, err := newDeferredWriter(l.c.fs, dataPath(l.c.tbl, dir), sc, spec, l.c.tbl.Properties(), []string{colLSN, colCommitTS}, opts)
		if err != nil {
			return err
		}
		for i, f := range l.c.idx {
			l.idx[i] = pos[f]
		}
		l.cur = d
	}
	l.changes++
	if err := l.c.appendTo(l.cur.bld.Field, &l.idx, op, txInfo{xid: xid}, seq, before, after, nil); err != nil {
		return err
	}
	if l.cur.rows++; l.cur.rows%parquetx.BatchRows == 0 && (l.cur.rows >= specRowGroupRows || l.cur.size() >= specRowGroupBytes) {
		if err := l.cur.seal(); err != nil {
			return err
		}
		l.sealed = append(l.sealed, l.cur)
		l.cur = nil
	}
	return nil
}

// finish completes every file with the commit's LSN and time.
func (l *specLog) finish(lsn decode.LSN, commitTS time.Time) ([]icego.DataFile, error) {
	files := l.sealed
	if l.cur != nil {
		files = append(files, l.cur)
	}
	l.sealed, l.cur = nil, nil
	var out []icego.DataFile
	for i, d := range files {
		late := make([]arrow.Array, len(d.late))
		for j, f := range d.late {
			late[j] = constantArray(f.Type, d.rows, lsn, commitTS)
		}
		df, err := d.finish(late)
		for _, a := range late {
			a.Release()
		}
		if err != nil {
			for _, rest := range files[i+1:] {
				rest.abort()
			}
			return nil, err
		}
		out = append(out, df)
	}
	return out, nil
}

// constantArray is n copies of the commit LSN (an int64 field) or time (a
// timestamp field).
func constantArray(t arrow.DataType, n int, lsn decode.LSN, at time.Time) arrow.Array {
	switch t := t.(type) {
	case *arrow.TimestampType:
		b := array.NewTimestampBuilder(memory.DefaultAllocator, t)
		defer b.Release()
		b.Reserve(n)
		v := arrow.Timestamp(at.UnixMicro())
		for range n {
			b.UnsafeAppend(v)
		}
		return b.NewArray()
	default:
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(n)
		for range n {
			b.UnsafeAppend(int64(lsn))
		}
		return b.NewArray()
	}
}

func (l *specLog) abort() {
	for _, d := range l.sealed {
		d.abort()
	}
	if l.cur != nil {
		l.cur.abort()
	}
	l.sealed, l.cur = nil, nil
}
