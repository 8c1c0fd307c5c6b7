package iceberg

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// fileWriter streams rows into one Parquet file of a table and describes
// it for a manifest when it is closed. Rows go to pw's builders, then
// pw.RowDone (see parquetx.Writer).
type fileWriter struct {
	fs        icebergio.WriteFileIO
	path      string
	schema    *icego.Schema
	spec      icego.PartitionSpec
	partition map[int]any
	content   icego.ManifestEntryContent
	props     icego.Properties
	pw        *parquetx.Writer
	target    int64 // bytes at which the file should end (see full); 0: none
}

// newFileWriter opens a file of the default Parquet settings.
func newFileWriter(fs icebergio.WriteFileIO, path string, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, content icego.ManifestEntryContent, props icego.Properties) (*fileWriter, error) {
	return newFileWriterWith(fs, path, sc, spec, partition, content, props, parquetx.Options{}, 0)
}

// newFileWriterWith opens a file of the Parquet settings opts that should
// end at target bytes (0: none; see fileLayout).
func newFileWriterWith(fs icebergio.WriteFileIO, path string, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, content icego.ManifestEntryContent, props icego.Properties, opts parquetx.Options, target int64) (*fileWriter, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema for %s: %w", path, err)
	}
	out, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	pw, err := parquetx.NewWriterWith(asc, out, path, opts)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	return &fileWriter{fs: fs, path: path, schema: sc, spec: spec, partition: partition, content: content, props: props, pw: pw, target: target}, nil
}

// builder returns the builder of top-level field i.
func (f *fileWriter) builder(i int) array.Builder { return f.pw.Builder(i) }

// rows returns the rows appended so far: the next row's position.
func (f *fileWriter) rows() int64 { return f.pw.Rows() }

// bytes estimates the file's size so far.
func (f *fileWriter) bytes() int64 { return f.pw.Bytes() }

// close finishes the file and describes it for a manifest.
func (f *fileWriter) close() (icego.DataFile, error) {
	md, size, err := f.pw.Close()
	if err != nil {
		return nil, err
	}
	return describeFile(md, f.path, size, f.schema, f.spec, f.partition, f.content, f.props)
}

// describeFile describes a closed Parquet file for a manifest.
func describeFile(md *metadata.FileMetaData, path string, size int64, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, content icego.ManifestEntryContent, props icego.Properties) (icego.DataFile, error) {
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
	f.pw.Abort()
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
// opts are the table's Parquet settings (see deleteFileLayout). The file
// is in partition partition of spec, the partition of the data files its
// deletes point at (nil: unpartitioned); sc is the table's schema.
func writePositionDeletes(ctx context.Context, fs icebergio.WriteFileIO, path string, sc *icego.Schema, spec icego.PartitionSpec, partition map[int]any, dels []posDelete, opts parquetx.Options) (icego.DataFile, error) {
	fw, err := newFileWriterWith(fs, path, icego.PositionalDeleteSchema, spec, partition, icego.EntryContentPosDeletes, nil, deleteFileLayout(opts), 0)
	if err != nil {
		return nil, err
	}
	// The manifest entry's partition is typed by its source columns, which
	// a delete file does not hold: it is described with them.
	fw.schema = deleteSchema(sc, spec)
	pathB := fw.builder(0).(*array.StringBuilder)
	posB := fw.builder(1).(*array.Int64Builder)
	for _, d := range dels {
		if ctx.Err() != nil {
			fw.abort()
			return nil, ctx.Err()
		}
		pathB.Append(d.path)
		posB.Append(d.pos)
		if err := fw.pw.RowDone(); err != nil {
			fw.abort()
			return nil, err
		}
	}
	return fw.close()
}

// deleteSchema is the schema a position delete file of spec is described
// with: the delete columns and the source columns of spec's fields, so
// its partition values get their types (the file holds no such column).
func deleteSchema(sc *icego.Schema, spec icego.PartitionSpec) *icego.Schema {
	if spec.IsUnpartitioned() || sc == nil {
		return icego.PositionalDeleteSchema
	}
	fields := icego.PositionalDeleteSchema.Fields()
	for _, pf := range spec.Fields() {
		if f, ok := sc.FindFieldByID(pf.SourceID()); ok && !slices.ContainsFunc(fields, func(g icego.NestedField) bool { return g.ID == f.ID }) {
			f.Required = false
			fields = append(fields, f)
		}
	}
	return icego.NewSchema(0, fields...)
}
