package iceberg

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// batchRows is how many rows are buffered in Arrow builders before they are
// handed to the Parquet writer.
const batchRows = 8192

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

// fileWriter streams rows into one Parquet file of a table. Rows are
// appended to Arrow builders and written out every batchRows rows, so the
// memory a file holds is one batch plus the row group being encoded.
type fileWriter struct {
	fs        icebergio.WriteFileIO
	path      string
	schema    *icego.Schema
	spec      icego.PartitionSpec
	partition map[int]any
	content   icego.ManifestEntryContent
	props     icego.Properties
	out       icebergio.FileWriter
	cw        *countingWriter
	pw        parquetOut
	bld       *array.RecordBuilder
	rows      int64 // rows appended so far: the next row's position
	dataLen   []int // value bytes of each binary field in the last full batch
}

// binaryData is a string or binary builder's value buffer.
type binaryData interface {
	DataLen() int
	ReserveData(int)
}

func newFileWriter(fs icebergio.WriteFileIO, path string, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, content icego.ManifestEntryContent, props icego.Properties) (*fileWriter, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema for %s: %w", path, err)
	}
	out, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	cw := newCountingWriter(out)
	pw, err := newParquetOut(asc, cw)
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("parquet writer for %s: %w", path, err)
	}
	return &fileWriter{
		fs: fs, path: path, schema: sc, spec: spec, partition: partition, content: content, props: props,
		out: out, cw: cw, pw: pw, bld: array.NewRecordBuilder(dataAlloc, asc),
	}, nil
}

// writerProps are the Parquet settings of every file written.
func writerProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		// zstd's fastest level: about half the CPU of its default level,
		// which Parquet writing spends most of, for files of about the
		// same size (row groups of similar values compress well either way).
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1),
		parquet.WithStats(true),
		// Iceberg's Parquet mapping: decimals of precision <= 9 as INT32,
		// <= 18 as INT64, larger as FIXED_LEN_BYTE_ARRAY.
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxRowGroupLength(int64(rowGroupRows)),
		// A column whose dictionary outgrows 64 KiB (unique keys, LSNs,
		// hashes) falls back to plain encoding early instead of hashing
		// every value of the row group; low-cardinality columns keep theirs.
		parquet.WithDictionaryPageSizeLimit(64<<10),
		parquet.WithAllocator(dataAlloc),
	)
}

// builder returns the builder of top-level field i.
func (f *fileWriter) builder(i int) array.Builder { return f.bld.Field(i) }

// rowDone records that one row was appended to every builder, and writes a
// batch out when enough rows are buffered.
func (f *fileWriter) rowDone() error {
	f.rows++
	if f.bld.Field(0).Len() >= batchRows {
		return f.writeBatch()
	}
	return nil
}

func (f *fileWriter) writeBatch() error {
	if f.bld.Field(0).Len() == 0 {
		return nil
	}
	full := f.bld.Field(0).Len() >= batchRows
	if full {
		f.dataLen = f.dataLen[:0]
		for _, b := range f.bld.Fields() {
			n := 0
			if b, ok := b.(binaryData); ok {
				n = b.DataLen()
			}
			f.dataLen = append(f.dataLen, n)
		}
	}
	rec := f.bld.NewRecordBatch()
	defer rec.Release()
	if full {
		// A writer that filled a batch likely fills the next: size the
		// builders for it at once rather than doubling up to it.
		f.bld.Reserve(batchRows)
		for i, b := range f.bld.Fields() {
			if b, ok := b.(binaryData); ok && f.dataLen[i] > 0 {
				b.ReserveData(f.dataLen[i])
			}
		}
	}
	if err := f.pw.write(rec); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// bytes estimates the file's size so far.
func (f *fileWriter) bytes() int64 { return f.cw.n + f.pw.rowGroupBytes() }

// close finishes the file and describes it for a manifest.
func (f *fileWriter) close() (icego.DataFile, error) {
	if err := f.writeBatch(); err != nil {
		return nil, err
	}
	f.bld.Release()
	if err := closeParquet(f.pw.close, f.cw, f.out, f.path); err != nil {
		return nil, err
	}
	return describeFile(f.pw.metadata, f.path, f.cw.n, f.schema, f.spec, f.partition, f.content, f.props)
}

// closeParquet finishes a Parquet file: its footer, the buffered bytes,
// the file.
func closeParquet(closeWriter func() error, cw *countingWriter, out io.Closer, path string) error {
	if err := closeWriter(); err != nil {
		_ = out.Close()
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := cw.flush(); err != nil {
		_ = out.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// describeFile describes a closed Parquet file for a manifest.
func describeFile(meta func() (*metadata.FileMetaData, error), path string, size int64, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, content icego.ManifestEntryContent, props icego.Properties) (icego.DataFile, error) {
	md, err := meta()
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", path, err)
	}
	args := table.DataFileArgs{
		Schema:          sc,
		Spec:            spec,
		Format:          icego.ParquetFile,
		Metadata:        md,
		FilePath:        path,
		FileSize:        size,
		Content:         content,
		PartitionValues: partition,
		Properties:      props,
		FormatVersion:   2,
	}
	df, err := table.DataFileFromMetadata(args)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	return df, nil
}

// abort abandons the file and deletes it: no commit has named it. (On S3
// closing completes the upload, which the delete then removes.)
func (f *fileWriter) abort() {
	f.bld.Release()
	_ = f.pw.close()
	_ = f.out.Close()
	removeFile(f.fs, f.path)
}

// removeFile deletes a file the bridge wrote and no commit references. A
// failure only leaves an orphan for orphan-file cleanup: it is counted,
// not fatal.
func removeFile(fs icebergio.WriteFileIO, path string) {
	if err := fs.Remove(path); err == nil {
		abandonedRemoved.Add(1)
	} else {
		abandonedKept.Add(1)
	}
}

// posDelete is one row to delete: a data file and a row position in it.
type posDelete struct {
	path string
	pos  int64
}

// writePositionDeletes writes one position delete file for dels, which must
// be sorted by path and position. referenced_data_file is left unset: a
// delete may target a data file added in the same snapshot, which
// iceberg-go's commit validation would reject as missing, and the check
// scans every manifest of the table on each commit.
func writePositionDeletes(ctx context.Context, fs icebergio.WriteFileIO, path string, spec icego.PartitionSpec, dels []posDelete) (icego.DataFile, error) {
	fw, err := newFileWriter(fs, path, icego.PositionalDeleteSchema, spec, nil, icego.EntryContentPosDeletes, nil)
	if err != nil {
		return nil, err
	}
	pathB := fw.builder(0).(*array.StringBuilder)
	posB := fw.builder(1).(*array.Int64Builder)
	for _, d := range dels {
		if ctx.Err() != nil {
			fw.abort()
			return nil, ctx.Err()
		}
		pathB.Append(d.path)
		posB.Append(d.pos)
		if err := fw.rowDone(); err != nil {
			fw.abort()
			return nil, err
		}
	}
	return fw.close()
}
