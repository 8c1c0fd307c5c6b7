package parquetx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// nestedIntSchema has int fields at every depth: top level, in a list, in
// a list of lists, in a struct and its nested struct and list, as a map's
// key and in a map's struct value.
func nestedIntSchema() *icego.Schema {
	i32, str := icego.PrimitiveTypes.Int32, icego.PrimitiveTypes.String
	return icego.NewSchema(1,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true},
		icego.NestedField{ID: 2, Name: "n", Type: i32},
		icego.NestedField{ID: 3, Name: "tags", Type: &icego.ListType{ElementID: 4, Element: str}},
		icego.NestedField{ID: 5, Name: "grid", Type: &icego.ListType{ElementID: 6, Element: &icego.ListType{ElementID: 7, Element: i32}}},
		icego.NestedField{ID: 8, Name: "rec", Type: &icego.StructType{FieldList: []icego.NestedField{
			{ID: 9, Name: "a", Type: i32, Required: true},
			{ID: 10, Name: "s", Type: str},
			{ID: 11, Name: "xs", Type: &icego.ListType{ElementID: 12, Element: i32, ElementRequired: true}},
			{ID: 13, Name: "inner", Type: &icego.StructType{FieldList: []icego.NestedField{{ID: 14, Name: "b", Type: i32}}}},
		}}},
		icego.NestedField{ID: 15, Name: "m", Type: &icego.MapType{KeyID: 16, KeyType: i32, ValueID: 17, ValueType: i32}},
		icego.NestedField{ID: 18, Name: "ms", Type: &icego.MapType{KeyID: 19, KeyType: str, ValueID: 20, ValueRequired: true,
			ValueType: &icego.StructType{FieldList: []icego.NestedField{{ID: 21, Name: "c", Type: i32}}}}},
	)
}

// nestedIntRows is n rows of nestedIntSchema as JSON, with NULLs and empty
// values at every level, and ints of both signs up to their limits.
func nestedIntRows(from, n int) string {
	var b strings.Builder
	b.WriteString("[")
	for r := from; r < from+n; r++ {
		if r > from {
			b.WriteString(",")
		}
		v := func(k int) any { // a spread of int32s, NULL every 7th
			if (r+k)%7 == 0 {
				return nil
			}
			x := int64(r*7919+k*104729) % (1 << 31)
			if (r+k)%3 == 0 {
				x = -x - 1
			}
			return x
		}
		row := map[string]any{"id": r, "n": v(0)}
		switch r % 4 {
		case 0:
			row["tags"] = nil
		case 1:
			row["tags"] = []any{}
		default:
			row["tags"] = []any{fmt.Sprint("t", r), nil, "u"}
		}
		if r%5 != 0 {
			row["grid"] = []any{[]any{v(1), v(2)}, []any{}, nil, []any{v(3)}}
		}
		if r%6 != 0 {
			row["rec"] = map[string]any{"a": r - 1<<30, "s": fmt.Sprint("s", r%10), "xs": []any{r * 3, r, -r},
				"inner": map[string]any{"b": v(5)}}
			if r%3 == 0 {
				row["rec"].(map[string]any)["inner"] = nil
				row["rec"].(map[string]any)["xs"] = nil
			}
		}
		if r%8 != 0 {
			row["m"] = []any{map[string]any{"key": r, "value": v(6)}, map[string]any{"key": -r - 1, "value": v(7)}}
		}
		if r%9 != 0 {
			row["ms"] = []any{map[string]any{"key": fmt.Sprint("k", r%4), "value": map[string]any{"c": v(8)}}}
		}
		switch r {
		case 1:
			row["n"], row["rec"].(map[string]any)["a"] = int32(-1<<31), int32(1<<31-1)
		case 2:
			row["n"] = int32(1<<31 - 1)
		}
		j, _ := json.Marshal(row)
		b.Write(j)
	}
	b.WriteString("]")
	return b.String()
}

// TestNestedPlainInt32 writes a table of nested columns through the
// bridge's writer (pqarrow's path) and through pqarrow as it is: the files
// are the same but that no INT32 column of the bridge's carries the
// INT(32, signed) annotation (which Spark's vectorized reader fails on
// after a promotion to long: see plainInt32); every value reads back and
// the statistics Iceberg records are the same.
func TestNestedPlainInt32(t *testing.T) {
	sc := nestedIntSchema()
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if flatSchema(asc) {
		t.Fatal("flatSchema takes a nested schema")
	}
	var recs []arrow.RecordBatch
	row := 0
	for _, n := range []int{1, 8192, 3000, 20_000, 7} {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(nestedIntRows(row, n)))
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		recs = append(recs, rec)
		row += n
	}
	recs = append(recs, recs[3].NewSlice(1000, 5000)) // arrays with an offset
	defer recs[len(recs)-1].Release()
	row += 4000

	defer func(rows int) { rowGroupRows = rows }(rowGroupRows)
	rowGroupRows = 10_000
	dir := t.TempDir()
	write := func(name string, out func(*countingWriter) parquetOut) (icego.DataFile, []byte) {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		of := newOutput(f, path)
		o := out(of.cw)
		for _, r := range recs {
			if err := o.write(r); err != nil {
				t.Fatal(err)
			}
		}
		md, size, err := of.finish(o)
		if err != nil {
			t.Fatal(err)
		}
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema: sc, Spec: *icego.UnpartitionedSpec, Format: icego.ParquetFile, Metadata: md,
			FilePath: path, FileSize: size, Content: icego.EntryContentData, FormatVersion: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return df, b
	}
	refDF, ref := write("pqarrow.parquet", func(cw *countingWriter) parquetOut {
		return &arrowOut{pw: annotatingWriter(t, asc, cw), rgBytes: rowGroupTarget}
	})
	df, got := write("bridge.parquet", func(cw *countingWriter) parquetOut {
		o, err := newParquetOut(asc, cw, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := o.(*arrowOut); !ok {
			t.Fatalf("the writer of a nested schema is %T, want pqarrow's", o)
		}
		return o
	})
	sameFileButIntAnnotation(t, ref, got)
	if n := plainInt32Columns(t, got); n != 8 {
		t.Errorf("%d plain INT32 columns, want 8 (every int field)", n)
	}
	if df.Count() != int64(row) {
		t.Errorf("data file has %d rows, want %d", df.Count(), row)
	}
	for name, m := range map[string][2]any{
		"value counts":  {df.ValueCounts(), refDF.ValueCounts()},
		"null counts":   {df.NullValueCounts(), refDF.NullValueCounts()},
		"lower bounds":  {df.LowerBoundValues(), refDF.LowerBoundValues()},
		"upper bounds":  {df.UpperBoundValues(), refDF.UpperBoundValues()},
		"column sizes":  {df.ColumnSizes(), refDF.ColumnSizes()},
		"split offsets": {df.SplitOffsets(), refDF.SplitOffsets()},
	} {
		if !reflect.DeepEqual(m[0], m[1]) {
			t.Errorf("%s: %v, pqarrow's %v", name, m[0], m[1])
		}
	}
	// n (field 2) runs over int32's whole range.
	if lo, hi := df.LowerBoundValues()[2], df.UpperBoundValues()[2]; !bytes.Equal(lo, []byte{0, 0, 0, 0x80}) || !bytes.Equal(hi, []byte{0xff, 0xff, 0xff, 0x7f}) {
		t.Errorf("bounds of n: %x, %x; want int32's least and greatest", lo, hi)
	}
	sameRows(t, filepath.Join(dir, "bridge.parquet"), recs)
}

// annotatingWriter is pqarrow's writer as it is, annotating INT32.
func annotatingWriter(t *testing.T, asc *arrow.Schema, cw *countingWriter) *parquetWriter {
	t.Helper()
	pw, err := pqarrow.NewFileWriter(asc, cw, writerProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(dataAlloc)))
	if err != nil {
		t.Fatal(err)
	}
	return &parquetWriter{FileWriter: pw, sc: asc}
}

// plainInt32Columns fails for an INT32 column with an INT annotation and
// returns the number of plain INT32 columns of a Parquet file.
func plainInt32Columns(t *testing.T, b []byte) int {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	sc := r.MetaData().Schema
	for i := range sc.NumColumns() {
		c := sc.Column(i)
		if c.PhysicalType() != parquet.Types.Int32 {
			continue
		}
		if _, ok := c.LogicalType().(schema.IntLogicalType); ok {
			t.Errorf("column %s is INT32 %s", c.Path(), c.LogicalType())
		}
		if c.LogicalType().Equals(schema.NoLogicalType{}) {
			n++
		}
	}
	return n
}

// sameRows reads the Parquet file at path and requires the rows of recs.
func sameRows(t *testing.T, path string, recs []arrow.RecordBatch) {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	want := array.NewTableFromRecords(recs[0].Schema(), recs)
	defer want.Release()
	if tbl.NumRows() != want.NumRows() || tbl.NumCols() != want.NumCols() {
		t.Fatalf("read back %d rows of %d columns, want %d of %d", tbl.NumRows(), tbl.NumCols(), want.NumRows(), want.NumCols())
	}
	// As JSON: a null struct's children hold what its builder appended,
	// which no file keeps.
	asJSON := func(c *arrow.Chunked) string {
		a, err := array.Concatenate(c.Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		j, err := a.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(j)
	}
	for i := range int(want.NumCols()) {
		if got, want := asJSON(tbl.Column(i).Data()), asJSON(want.Column(i).Data()); got != want {
			at := 0
			for at < min(len(got), len(want)) && got[at] == want[at] {
				at++
			}
			from := max(0, at-100)
			t.Errorf("column %s reads back as ...%.200s\nwant ...%.200s", tbl.Schema().Field(i).Name, got[from:], want[from:])
		}
	}
}

// TestColumnWriterPlainInt32: a file written column by column (a
// changelog file written ahead of its commit) of nested columns, in
// another order than the table's, has plain INT32 too, and reads back.
func TestColumnWriterPlainInt32(t *testing.T) {
	asc, err := table.SchemaToArrowSchema(nestedIntSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(nestedIntRows(0, 3000)))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	// n and rec last, as a changelog file's late columns.
	var cols []arrow.Array
	var fields []arrow.Field
	for _, i := range []int{0, 2, 3, 5, 6, 1, 4} {
		cols, fields = append(cols, rec.Column(i)), append(fields, asc.Field(i))
	}
	reordered := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer reordered.Release()
	path := filepath.Join(t.TempDir(), "columns.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewColumnWriter(reordered.Schema(), f, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.NewRowGroup(); err != nil {
		t.Fatal(err)
	}
	if w.NumColumns() != len(cols) {
		t.Fatalf("%d columns, want %d", w.NumColumns(), len(cols))
	}
	for i, c := range cols {
		if err := w.WriteColumn(i, c); err != nil {
			t.Fatal(err)
		}
	}
	md, _, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if md.NumRows != rec.NumRows() {
		t.Errorf("file has %d rows, want %d", md.NumRows, rec.NumRows())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := plainInt32Columns(t, b); n != 8 {
		t.Errorf("%d plain INT32 columns, want 8 (every int field)", n)
	}
	sameRows(t, path, []arrow.RecordBatch{reordered})
}

// BenchmarkNestedWrite writes batches of nested columns with int fields
// through the bridge's writer ("plain": re-typed to plainInt32 per batch)
// and through pqarrow as it is ("annotated"), into nothing.
func BenchmarkNestedWrite(b *testing.B) {
	if err := UseFastZstd(); err != nil {
		b.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(nestedIntSchema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, asc, strings.NewReader(nestedIntRows(0, BatchRows)))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	for _, w := range []struct {
		name string
		open func(*countingWriter) (*parquetWriter, error)
	}{
		{"plain", func(cw *countingWriter) (*parquetWriter, error) { return newParquetWriter(asc, cw, writerProps()) }},
		{"annotated", func(cw *countingWriter) (*parquetWriter, error) {
			pw, err := pqarrow.NewFileWriter(asc, cw, writerProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(dataAlloc)))
			return &parquetWriter{FileWriter: pw, sc: asc}, err
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				cw := newCountingWriter(io.Discard)
				pw, err := w.open(cw)
				if err != nil {
					b.Fatal(err)
				}
				o := &arrowOut{pw: pw, rgBytes: rowGroupTarget}
				for range 4 {
					if err := o.write(rec); err != nil {
						b.Fatal(err)
					}
				}
				if err := o.close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
