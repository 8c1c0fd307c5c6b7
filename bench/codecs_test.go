package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// codecRows is the rows of a file of BenchmarkCodecs.
const codecRows = 200_000

// BenchmarkCodecs writes a file of codecRows rows (a unique int64 key, an
// email of 50 values, a unique text) with each codec the bridge writes and
// reports bytes and CPU time per row: go test -bench Codecs ./bench/ (the
// figures are in README.md).
func BenchmarkCodecs(b *testing.B) {
	asc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "email", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, codec := range []string{"zstd", "snappy", "gzip", "lz4", "uncompressed"} {
		b.Run(codec, func(b *testing.B) {
			var size int64
			for range b.N {
				size = writeCodecFile(b, asc, filepath.Join(b.TempDir(), "f.parquet"), parquetx.Options{Codec: codec})
			}
			b.ReportMetric(float64(size)/codecRows, "B/row")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/codecRows, "ns/row")
		})
	}
}

// writeCodecFile writes the benchmark's rows to path and returns its size.
func writeCodecFile(b *testing.B, asc *arrow.Schema, path string, opts parquetx.Options) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := parquetx.NewWriterWith(asc, f, path, opts)
	if err != nil {
		b.Fatal(err)
	}
	for i := range codecRows {
		w.Builder(0).(*array.Int64Builder).Append(int64(i))
		w.Builder(1).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", i%50))
		w.Builder(2).(*array.StringBuilder).Append(fmt.Sprintf("kind-%d", i))
		if err := w.RowDone(); err != nil {
			b.Fatal(err)
		}
	}
	_, size, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	return size
}
