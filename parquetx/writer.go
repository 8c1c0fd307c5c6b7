package parquetx

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// BatchRows is how many rows a Writer buffers in Arrow builders before it
// hands them to the Parquet writer.
const BatchRows = 8192

// A row group ends at rowGroupRows rows, or at the first batch after which
// its pages hold rowGroupTarget bytes (compressed): a writer holds its open
// row group in memory, so the bytes bound what a copy worker holds for a
// wide table. Every row group pays for new column writers, buffers grown
// again and dictionaries tried again on unique columns: row groups of 128k
// rows cost the 5M-row benchmark copy a tenth of its CPU more than row
// groups of 1M. (Variables so that tests can make them small.)
var (
	rowGroupRows   = 1 << 20
	rowGroupTarget = int64(32 << 20)
)

// countingWriter buffers what is written to a file and counts the bytes.
// The Parquet writer writes a page header and its data separately, and
// small pages; without the buffer each is a system call.
type countingWriter struct {
	w *bufio.Writer
	n int64
}

func newCountingWriter(w io.Writer) *countingWriter {
	return &countingWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

// flush writes out what is buffered.
func (c *countingWriter) flush() error { return c.w.Flush() }

// Write writes p, a whole column chunk at a row group's end, in pieces of
// at most the buffer's size: on this project's benchmark VM, writes of
// several MiB to a local file cost the kernel twice the CPU of writes of
// 256 KiB, and sometimes ten times.
func (c *countingWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n, err := c.w.Write(p[:min(len(p), c.w.Size())])
		written += n
		c.n += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// output is the file a writer writes: the file, what buffers and counts
// the bytes written to it, and its name for errors.
type output struct {
	name string
	out  io.WriteCloser
	cw   *countingWriter
}

func newOutput(out io.WriteCloser, name string) output {
	return output{name: name, out: out, cw: newCountingWriter(out)}
}

// finish finishes the file: pw's footer, the buffered bytes, the file. It
// returns the file's metadata and size.
func (o *output) finish(pw parquetOut) (*metadata.FileMetaData, int64, error) {
	if err := pw.close(); err != nil {
		_ = o.out.Close()
		return nil, 0, fmt.Errorf("close %s: %w", o.name, err)
	}
	if err := o.cw.flush(); err != nil {
		_ = o.out.Close()
		return nil, 0, fmt.Errorf("write %s: %w", o.name, err)
	}
	if err := o.out.Close(); err != nil {
		return nil, 0, fmt.Errorf("close %s: %w", o.name, err)
	}
	md, err := pw.metadata()
	if err != nil {
		return nil, 0, fmt.Errorf("metadata of %s: %w", o.name, err)
	}
	return md, o.cw.n, nil
}

// Writer streams rows into one Parquet file. Rows are appended to Arrow
// builders (Builder) and written out every BatchRows rows, so the memory a
// file holds is one batch plus the row group being encoded. A schema of
// primitive columns is written by the flat writer (see flatOut), any other
// by pqarrow; int32 is plain INT32 either way (see plainInt32).
type Writer struct {
	output
	pw      parquetOut
	bld     *array.RecordBuilder
	rows    int64 // rows appended so far: the next row's position
	dataLen []int // value bytes of each binary builder (eachBinary's order) in the last full batch
	// sort are the keys the file's rows are sorted by (nil: none). Its
	// batches are then held (held, heldBytes in memory) until Close sorts
	// and writes them; order is the sort's (see Order).
	sort      []SortKey
	held      []arrow.RecordBatch
	heldBytes int64
	order     []int32
}

// binaryData is a string or binary builder's value buffer.
type binaryData interface {
	DataLen() int
	ReserveData(int)
}

// eachBinary calls f with every string or binary builder of b: b itself,
// or the fields of a struct, at any depth (the changelog's before and
// after images). Lists and maps are left out: their values' count per
// batch varies.
func eachBinary(b array.Builder, f func(binaryData)) {
	switch b := b.(type) {
	case binaryData:
		f(b)
	case *array.StructBuilder:
		for i := range b.NumField() {
			eachBinary(b.FieldBuilder(i), f)
		}
	}
}

// NewWriter returns a writer of data of schema asc into out, the file
// name, which Close and Abort close. On error out is left open. Its errors
// name the file.
func NewWriter(asc *arrow.Schema, out io.WriteCloser, name string) (*Writer, error) {
	return NewWriterWith(asc, out, name, Options{})
}

// NewWriterWith is NewWriter with the Parquet settings opts.
func NewWriterWith(asc *arrow.Schema, out io.WriteCloser, name string, opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("parquet settings for %s: %w", name, err)
	}
	o := newOutput(out, name)
	pw, err := newParquetOut(asc, o.cw, opts)
	if err != nil {
		return nil, fmt.Errorf("parquet writer for %s: %w", name, err)
	}
	return &Writer{output: o, pw: pw, bld: array.NewRecordBuilder(dataAlloc, asc), sort: sortOf(opts)}, nil
}

// Builder returns the builder of top-level field i. A row is appended to
// every builder, then RowDone is called.
func (w *Writer) Builder(i int) array.Builder { return w.bld.Field(i) }

// Rows returns the rows appended so far: the next row's position.
func (w *Writer) Rows() int64 { return w.rows }

// RowDone records that one row was appended to every builder, and writes a
// batch out when enough rows are buffered.
func (w *Writer) RowDone() error {
	w.rows++
	if w.bld.Field(0).Len() >= BatchRows {
		return w.writeBatch()
	}
	return nil
}

func (w *Writer) writeBatch() error {
	if w.bld.Field(0).Len() == 0 {
		return nil
	}
	full := w.bld.Field(0).Len() >= BatchRows
	if full {
		w.dataLen = w.dataLen[:0]
		for _, b := range w.bld.Fields() {
			eachBinary(b, func(d binaryData) { w.dataLen = append(w.dataLen, d.DataLen()) })
		}
	}
	rec := w.bld.NewRecordBatch()
	if w.sort != nil {
		w.held = append(w.held, rec)
		w.heldBytes += RecordBytes(rec)
	} else {
		defer rec.Release()
	}
	if full {
		// A writer that filled a batch likely fills the next: size the
		// builders for it at once rather than doubling up to it.
		w.bld.Reserve(BatchRows)
		i := 0
		for _, b := range w.bld.Fields() {
			eachBinary(b, func(d binaryData) {
				if w.dataLen[i] > 0 {
					d.ReserveData(w.dataLen[i])
				}
				i++
			})
		}
	}
	if w.sort != nil {
		return nil
	}
	if err := w.pw.write(rec); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// Bytes estimates the file's size so far (of a sorted file: the bytes it
// holds in memory, uncompressed).
func (w *Writer) Bytes() int64 { return w.cw.n + w.pw.rowGroupBytes() + w.heldBytes }

// Close writes what is buffered (a sorted file's rows, sorted now) and the
// footer, closes out, and returns the file's metadata and size.
func (w *Writer) Close() (*metadata.FileMetaData, int64, error) {
	if err := w.writeBatch(); err != nil {
		return nil, 0, err
	}
	w.bld.Release()
	if err := w.writeSorted(); err != nil {
		_ = w.pw.close()
		_ = w.out.Close()
		return nil, 0, err
	}
	return w.finish(w.pw)
}

// writeSorted sorts the held batches of a sorted file and writes them.
func (w *Writer) writeSorted() error {
	if len(w.held) == 0 {
		return nil
	}
	sorted, order, err := SortRecords(context.Background(), w.bld.Schema(), w.held, w.sort)
	w.releaseHeld()
	if err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	defer sorted.Release()
	w.order = order
	tr := array.NewTableReader(sorted, BatchRows)
	defer tr.Release()
	for tr.Next() {
		if err := w.pw.write(tr.RecordBatch()); err != nil {
			return fmt.Errorf("write %s: %w", w.name, err)
		}
	}
	if err := tr.Err(); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// releaseHeld releases a sorted file's held batches.
func (w *Writer) releaseHeld() {
	for _, r := range w.held {
		r.Release()
	}
	w.held, w.heldBytes = nil, 0
}

// Sorted reports whether the file's rows are sorted at Close.
func (w *Writer) Sorted() bool { return w.sort != nil }

// Order returns, after Close of a file with sort keys, where each row
// went: Order()[i] is the position row i was appended at (nil: the rows
// are in the order appended).
func (w *Writer) Order() []int32 { return w.order }

// Abort abandons the file and closes out; the caller deletes the file.
func (w *Writer) Abort() {
	w.bld.Release()
	w.releaseHeld()
	_ = w.pw.close()
	_ = w.out.Close()
}

// ColumnWriter writes a Parquet file of one row group column by column,
// each column whole (a changelog file whose last columns are known only at
// its transaction's commit). int32 is plain INT32 (see plainInt32).
type ColumnWriter struct {
	output
	pw *parquetWriter
}

// NewColumnWriter returns a writer of data of schema asc into out, the
// file name, which Close and Abort close. On error out is left open. Its
// errors name the file.
func NewColumnWriter(asc *arrow.Schema, out io.WriteCloser, name string) (*ColumnWriter, error) {
	return NewColumnWriterWith(asc, out, name, Options{})
}

// NewColumnWriterWith is NewColumnWriter with the Parquet settings opts
// (the file has one row group: its size settings do not apply).
func NewColumnWriterWith(asc *arrow.Schema, out io.WriteCloser, name string, opts Options) (*ColumnWriter, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("parquet settings for %s: %w", name, err)
	}
	o := newOutput(out, name)
	pw, err := newParquetWriter(asc, o.cw, opts.props())
	if err != nil {
		return nil, fmt.Errorf("parquet writer for %s: %w", name, err)
	}
	return &ColumnWriter{output: o, pw: pw}, nil
}

// NewRowGroup starts the row group the columns are written into.
func (w *ColumnWriter) NewRowGroup() error {
	if err := w.pw.NewRowGroupChecked(); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// NumColumns returns the number of top-level columns of the schema.
func (w *ColumnWriter) NumColumns() int { return len(w.pw.sc.Fields()) }

// WriteColumn writes a, of the data's type, as column i, the next one of
// the row group.
func (w *ColumnWriter) WriteColumn(i int, a arrow.Array) error {
	if err := w.pw.writeColumn(i, a); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// Close writes the footer, closes out, and returns the file's metadata and
// size.
func (w *ColumnWriter) Close() (*metadata.FileMetaData, int64, error) {
	return w.finish(&arrowOut{pw: w.pw})
}

// Abort abandons the file and closes out; the caller deletes the file.
func (w *ColumnWriter) Abort() { _ = w.out.Close() }

// Bytes returns the bytes written so far: the row groups closed.
func (w *ColumnWriter) Bytes() int64 { return w.cw.n }
