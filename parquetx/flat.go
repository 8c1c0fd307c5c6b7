package parquetx

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetOut is the Parquet side of a Writer: batches of rows in, row
// groups of rowGroupRows rows or the options' row group bytes out.
type parquetOut interface {
	write(rec arrow.RecordBatch) error
	rowGroupBytes() int64 // bytes of the open row group so far
	close() error
	metadata() (*metadata.FileMetaData, error)
}

// newParquetOut returns the flat writer for a schema it can write, else
// pqarrow's.
func newParquetOut(asc *arrow.Schema, w io.Writer, opts Options) (parquetOut, error) {
	if flatSchema(asc) {
		return newFlatOut(asc, w, opts)
	}
	pw, err := newParquetWriter(asc, w, opts.props())
	if err != nil {
		return nil, err
	}
	return &arrowOut{pw: pw, rgBytes: opts.rowGroupBytes()}, nil
}

// arrowOut writes through pqarrow, which handles every type (nested ones
// with their repetition and definition levels).
type arrowOut struct {
	pw      *parquetWriter
	rgBytes int64 // bytes at which a row group ends
}

func (o *arrowOut) write(rec arrow.RecordBatch) error {
	if err := o.pw.writeBuffered(rec); err != nil {
		return err
	}
	if n, _ := o.pw.RowGroupNumRows(); n >= rowGroupRows || o.pw.RowGroupTotalBytesWritten() >= o.rgBytes {
		o.pw.NewBufferedRowGroup()
	}
	return nil
}

func (o *arrowOut) rowGroupBytes() int64                      { return o.pw.RowGroupTotalBytesWritten() }
func (o *arrowOut) close() error                              { return o.pw.Close() }
func (o *arrowOut) metadata() (*metadata.FileMetaData, error) { return o.pw.FileMetadata() }

// flatSchema reports whether every field is a primitive flatOut writes.
func flatSchema(asc *arrow.Schema) bool {
	for _, f := range asc.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64,
			arrow.STRING, arrow.BINARY, arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64,
			arrow.DECIMAL128, arrow.FIXED_SIZE_BINARY:
		case arrow.EXTENSION: // uuid: 16 fixed bytes
			if f.Type.(arrow.ExtensionType).StorageType().ID() != arrow.FIXED_SIZE_BINARY {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// flatOut writes a schema of primitive columns (flatSchema) straight to
// the Parquet column writers, handing them the Arrow arrays' values as
// they are. pqarrow builds definition levels for every batch in buffers of
// a shared pool that it clears in full on release, a large part of the CPU
// of writing such files; here the levels are one reused slice. The schema,
// encodings, statistics and pages are those pqarrow writes (the same
// column writers do the encoding); TestFlatOutSameFile checks the files
// are identical byte for byte.
type flatOut struct {
	w        *file.Writer
	rg       file.BufferedRowGroupWriter
	rows     int
	rgBytes  int64 // bytes at which a row group ends
	nullable []bool
	defs     []int16 // definition levels of the batch being written
	ones     []int16 // definition levels of a batch without nulls
	bytes    []parquet.ByteArray
	bools    []bool
	i32      []int32                     // decimals of precision <= 9
	i64      []int64                     // decimals of precision <= 18
	fixed    []parquet.FixedLenByteArray // larger decimals, uuids
	scratch  []byte                      // the big-endian bytes of larger decimals
}

func newFlatOut(asc *arrow.Schema, w io.Writer, opts Options) (*flatOut, error) {
	props := opts.props()
	sc, err := flatParquetSchema(asc, props)
	if err != nil {
		return nil, err
	}
	meta := make(metadata.KeyValueMetadata, 0)
	for i := range asc.Metadata().Len() {
		meta.Append(asc.Metadata().Keys()[i], asc.Metadata().Values()[i])
	}
	fw, err := file.NewParquetWriterWithError(w, sc.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	o := &flatOut{w: fw, rgBytes: opts.rowGroupBytes()}
	for _, f := range asc.Fields() {
		o.nullable = append(o.nullable, f.Nullable)
	}
	return o, nil
}

// flatParquetSchema is the Parquet schema of asc: pqarrow's, with plain
// INT32 for int32 (see plainInt32).
func flatParquetSchema(asc *arrow.Schema, props *parquet.WriterProperties) (*schema.Schema, error) {
	fields, _ := plainIntFields(asc.Fields())
	return pqarrow.ToParquet(arrow.NewSchema(fields, nil), props, pqarrow.DefaultWriterProps())
}

// write writes a batch, splitting it where a row group fills up (as
// pqarrow's WriteBuffered does).
func (o *flatOut) write(rec arrow.RecordBatch) error {
	for from, n := int64(0), rec.NumRows(); from < n; {
		to := min(n, from+int64(rowGroupRows-o.rows))
		part := rec
		if from > 0 || to < n {
			part = rec.NewSlice(from, to)
		}
		err := o.writeRows(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		from = to
	}
	return nil
}

// writeRows writes rows that fit in the open row group.
func (o *flatOut) writeRows(rec arrow.RecordBatch) error {
	if o.rg == nil {
		rg, err := o.w.AppendBufferedRowGroupChecked()
		if err != nil {
			return err
		}
		o.rg = rg
	}
	for i, col := range rec.Columns() {
		cw, err := o.rg.Column(i)
		if err != nil {
			return err
		}
		if err := o.writeColumn(cw, col, o.nullable[i]); err != nil {
			return fmt.Errorf("column %s: %w", rec.Schema().Field(i).Name, err)
		}
	}
	if o.rows += int(rec.NumRows()); o.rows >= rowGroupRows || o.rowGroupBytes() >= o.rgBytes {
		return o.closeRowGroup()
	}
	return nil
}

func (o *flatOut) closeRowGroup() error {
	if o.rg == nil {
		return nil
	}
	err := o.rg.Close()
	o.rg, o.rows = nil, 0
	return err
}

// writeColumn writes one column of a batch: values spaced (a slot for
// every row) with the validity bitmap when there are nulls.
func (o *flatOut) writeColumn(cw file.ColumnChunkWriter, col arrow.Array, nullable bool) error {
	n := col.Len()
	var defs []int16
	var valid []byte
	off := int64(col.Data().Offset())
	switch {
	case !nullable && col.NullN() > 0:
		return fmt.Errorf("%d nulls in a required column", col.NullN())
	case nullable && col.NullN() == 0:
		for len(o.ones) < n {
			o.ones = append(o.ones, 1)
		}
		defs = o.ones[:n]
	case nullable:
		defs = o.defs[:0]
		for i := range n {
			var d int16
			if col.IsValid(i) {
				d = 1
			}
			defs = append(defs, d)
		}
		o.defs = defs
		valid = col.NullBitmapBytes()
	}
	var err error
	switch cw := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		vals, err := intValues(&o.i32, col)
		if err != nil {
			return err
		}
		return writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, vals, defs, valid, off)
	case *file.Int64ColumnChunkWriter:
		vals, err := intValues(&o.i64, col)
		if err != nil {
			return err
		}
		return writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, vals, defs, valid, off)
	case *file.FixedLenByteArrayColumnChunkWriter:
		vals, err := o.fixedBytes(col, cw.Descr().TypeLength())
		if err != nil {
			return err
		}
		err = writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, vals, defs, valid, off)
		clear(vals)
		return err
	case *file.Float32ColumnChunkWriter:
		err = writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, arrow.GetValues[float32](col.Data(), 1), defs, valid, off)
	case *file.Float64ColumnChunkWriter:
		err = writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, arrow.GetValues[float64](col.Data(), 1), defs, valid, off)
	case *file.BooleanColumnChunkWriter:
		b, ok := col.(*array.Boolean)
		if !ok {
			return fmt.Errorf("%s in a boolean column", col.DataType())
		}
		vals := o.bools[:0]
		for i := range n {
			vals = append(vals, b.Value(i))
		}
		o.bools = vals
		err = writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, vals, defs, valid, off)
	case *file.ByteArrayColumnChunkWriter:
		switch col.(type) {
		case *array.String, *array.Binary:
		default:
			return fmt.Errorf("%s in a byte array column", col.DataType())
		}
		// Offsets index the whole value buffer, from the array's offset on.
		offsets := arrow.GetOffsets[int32](col.Data(), 1)
		var data []byte
		if buf := col.Data().Buffers()[2]; buf != nil {
			data = buf.Bytes()
		}
		vals := o.bytes[:0]
		for i := range n {
			vals = append(vals, data[offsets[i]:offsets[i+1]])
		}
		o.bytes = vals
		err = writeFlat(cw.WriteBatch, cw.WriteBatchSpacedWithError, vals, defs, valid, off)
		clear(vals) // keeps no batch's values alive
	default:
		return fmt.Errorf("no flat writer for %T", cw)
	}
	return err
}

// Decimals are stored as Iceberg's Parquet mapping says (and pqarrow with
// WithStoreDecimalAsInteger writes them): precision <= 9 as INT32, <= 18 as
// INT64, larger as the big-endian two's complement in the fewest bytes that
// hold the precision. The values were checked against their precision when
// appended; one that does not fit its physical type is an error here, not
// a truncated value.

// intValues returns the values of an INT32 or INT64 column: an integer
// array's own, or a decimal's unscaled values converted into buf.
func intValues[T int32 | int64](buf *[]T, col arrow.Array) ([]T, error) {
	d, ok := col.(*array.Decimal128)
	if !ok {
		return arrow.GetValues[T](col.Data(), 1), nil
	}
	vals := (*buf)[:0]
	for i := range d.Len() {
		v := d.Value(i)
		x := T(int64(v.LowBits()))
		if d.IsValid(i) && (v.HighBits() != int64(v.LowBits())>>63 || int64(x) != int64(v.LowBits())) {
			return nil, fmt.Errorf("decimal %s does not fit %T", v.ToString(d.DataType().(*arrow.Decimal128Type).Scale), x)
		}
		vals = append(vals, x)
	}
	*buf = vals
	return vals, nil
}

// fixedBytes returns the values of a fixed-size binary column (uuids as
// they are, decimals in n big-endian bytes); a null row's value is empty.
func (o *flatOut) fixedBytes(col arrow.Array, n int) ([]parquet.FixedLenByteArray, error) {
	vals := o.fixed[:0]
	switch col := col.(type) {
	case *array.Decimal128:
		o.scratch = slices.Grow(o.scratch[:0], 16*col.Len())[:16*col.Len()]
		for i := range col.Len() {
			if col.IsNull(i) {
				vals = append(vals, nil)
				continue
			}
			v, b := col.Value(i), o.scratch[16*i:16*i+16]
			binary.BigEndian.PutUint64(b, uint64(v.HighBits()))
			binary.BigEndian.PutUint64(b[8:], v.LowBits())
			// The bytes dropped, and the top bit of those kept, must be the
			// sign's.
			sign := byte(v.HighBits() >> 63)
			if slices.ContainsFunc(b[:16-n], func(x byte) bool { return x != sign }) || b[16-n]>>7 != sign&1 {
				return nil, fmt.Errorf("decimal %s does not fit %d bytes", v.ToString(col.DataType().(*arrow.Decimal128Type).Scale), n)
			}
			vals = append(vals, b[16-n:])
		}
	case array.ExtensionArray:
		return o.fixedBytes(col.Storage(), n)
	case *array.FixedSizeBinary:
		for i := range col.Len() {
			vals = append(vals, col.Value(i))
		}
	default:
		return nil, fmt.Errorf("%s in a fixed-length byte array column", col.DataType())
	}
	o.fixed = vals
	return vals, nil
}

// writeFlat writes values densely when every row has one, else spaced
// with the validity bitmap.
func writeFlat[T any](batch func([]T, []int16, []int16) (int64, error), spaced func([]T, []int16, []int16, []byte, int64) (int64, error), vals []T, defs []int16, valid []byte, off int64) error {
	var err error
	if valid == nil {
		_, err = batch(vals, defs, nil)
	} else {
		_, err = spaced(vals, defs, nil, valid, off)
	}
	return err
}

func (o *flatOut) rowGroupBytes() int64 {
	if o.rg == nil {
		return 0
	}
	return o.rg.TotalBytesWritten()
}

func (o *flatOut) close() error {
	if err := o.closeRowGroup(); err != nil {
		_ = o.w.Close()
		return err
	}
	return o.w.Close()
}

func (o *flatOut) metadata() (*metadata.FileMetaData, error) { return o.w.FileMetadata() }
