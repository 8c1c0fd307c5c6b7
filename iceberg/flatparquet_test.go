package iceberg

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestFlatOutSameFile writes the same batches of every type flatOut takes,
// required and optional, with and without nulls, over several row groups,
// through pqarrow and through flatOut: the files must be identical.
func TestFlatOutSameFile(t *testing.T) {
	sc := icego.NewSchema(1,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true},
		icego.NestedField{ID: 2, Name: "i", Type: icego.PrimitiveTypes.Int32},
		icego.NestedField{ID: 3, Name: "s", Type: icego.PrimitiveTypes.String},
		icego.NestedField{ID: 4, Name: "b", Type: icego.PrimitiveTypes.Binary},
		icego.NestedField{ID: 5, Name: "ok", Type: icego.PrimitiveTypes.Bool},
		icego.NestedField{ID: 6, Name: "f", Type: icego.PrimitiveTypes.Float32},
		icego.NestedField{ID: 7, Name: "d", Type: icego.PrimitiveTypes.Float64},
		icego.NestedField{ID: 8, Name: "day", Type: icego.PrimitiveTypes.Date},
		icego.NestedField{ID: 9, Name: "ts", Type: icego.PrimitiveTypes.TimestampTz},
		icego.NestedField{ID: 10, Name: "t", Type: icego.PrimitiveTypes.Time},
		icego.NestedField{ID: 11, Name: "name", Type: icego.PrimitiveTypes.String, Required: true},
		icego.NestedField{ID: 12, Name: "nothing", Type: icego.PrimitiveTypes.Int64},
	)
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !flatSchema(asc) {
		t.Fatal("flatSchema refuses a schema of primitives")
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer bld.Release()
	var recs []arrow.RecordBatch
	row := 0
	for _, n := range []int{1, 8192, 8192, 70_000, 100_000, 3, 8192} {
		for range n {
			null := func(every int) bool { return row%every == 0 }
			bld.Field(0).(*array.Int64Builder).Append(int64(row))
			if null(7) {
				bld.Field(1).AppendNull()
			} else {
				bld.Field(1).(*array.Int32Builder).Append(int32(row % 1000))
			}
			if null(5) {
				bld.Field(2).AppendNull()
			} else {
				bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("value %x", row*7919))
			}
			if null(3) {
				bld.Field(3).AppendNull()
			} else {
				bld.Field(3).(*array.BinaryBuilder).Append([]byte{byte(row), byte(row >> 8)})
			}
			if null(11) {
				bld.Field(4).AppendNull()
			} else {
				bld.Field(4).(*array.BooleanBuilder).Append(row%3 == 1)
			}
			bld.Field(5).(*array.Float32Builder).Append(float32(row) / 3)
			if null(2) {
				bld.Field(6).AppendNull()
			} else {
				bld.Field(6).(*array.Float64Builder).Append(float64(row) * 1.5)
			}
			bld.Field(7).(*array.Date32Builder).Append(arrow.Date32(row % 20000))
			bld.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(row) * 1_000_003))
			bld.Field(9).(*array.Time64Builder).Append(arrow.Time64(int64(row) % 86_400_000_000))
			bld.Field(10).(*array.StringBuilder).Append("n")
			bld.Field(11).AppendNull()
			row++
		}
		recs = append(recs, bld.NewRecordBatch())
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// A slice of a batch: arrays with an offset.
	recs = append(recs, recs[3].NewSlice(1000, 5000))

	write := func(o parquetOut, cw *countingWriter) (rowGroups int) {
		for _, r := range recs {
			if err := o.write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.close(); err != nil {
			t.Fatal(err)
		}
		if err := cw.flush(); err != nil {
			t.Fatal(err)
		}
		md, err := o.metadata()
		if err != nil {
			t.Fatal(err)
		}
		if md.NumRows != int64(row+4000) {
			t.Fatalf("metadata: %d rows, want %d", md.NumRows, row+4000)
		}
		return md.NumRowGroups()
	}
	// Row groups end at a number of rows (mid-batch) or at a size (after a
	// batch): both bounds, made small (1 byte: at the first batch after a
	// page was written).
	defer func(rows int, bytes int64) { rowGroupRows, rowGroupTarget = rows, bytes }(rowGroupRows, rowGroupTarget)
	for _, bound := range []struct {
		rows  int
		bytes int64
	}{{70_000, 1 << 40}, {1 << 30, 1}} {
		rowGroupRows, rowGroupTarget = bound.rows, bound.bytes
		var a, f bytes.Buffer
		acw, fcw := newCountingWriter(&a), newCountingWriter(&f)
		pw, err := newParquetWriter(asc, acw)
		if err != nil {
			t.Fatal(err)
		}
		groups := write(&arrowOut{pw: pw}, acw)
		fo, err := newFlatOut(asc, fcw)
		if err != nil {
			t.Fatal(err)
		}
		write(fo, fcw)
		if groups < 3 {
			t.Fatalf("%d row groups at %d rows or %d bytes, want several", groups, bound.rows, bound.bytes)
		}
		if !bytes.Equal(a.Bytes(), f.Bytes()) {
			i := 0
			for i < min(a.Len(), f.Len()) && a.Bytes()[i] == f.Bytes()[i] {
				i++
			}
			t.Fatalf("row groups of %d rows or %d bytes: pqarrow wrote %d bytes, flatOut %d; first difference at byte %d", bound.rows, bound.bytes, a.Len(), f.Len(), i)
		}
		t.Logf("%d row groups of at most %d rows or %d bytes", groups, bound.rows, bound.bytes)
	}

	// A null in a required column is an error, not a file.
	bld.Field(0).AppendNull()
	for i := 1; i < len(asc.Fields()); i++ {
		bld.Field(i).AppendNull()
	}
	bad := bld.NewRecordBatch()
	defer bad.Release()
	var f bytes.Buffer
	fo, err := newFlatOut(asc, newCountingWriter(&f))
	if err != nil {
		t.Fatal(err)
	}
	if err := fo.write(bad); err == nil {
		t.Fatal("flatOut wrote a null into a required column")
	}
}
