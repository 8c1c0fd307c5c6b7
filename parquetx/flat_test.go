package parquetx

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestFlatOutSameFile writes the same batches of every type flatOut takes,
// required and optional, with and without nulls, over several row groups,
// through pqarrow and through flatOut: the files must be the same but for
// the annotation of 32-bit integers (see flatParquetSchema).
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
		icego.NestedField{ID: 13, Name: "d9", Type: icego.DecimalTypeOf(9, 2)},
		icego.NestedField{ID: 14, Name: "d18", Type: icego.DecimalTypeOf(18, 4), Required: true},
		icego.NestedField{ID: 15, Name: "d38", Type: icego.DecimalTypeOf(38, 10)},
		icego.NestedField{ID: 16, Name: "d20", Type: icego.DecimalTypeOf(20, 0)},
		icego.NestedField{ID: 17, Name: "u", Type: icego.PrimitiveTypes.UUID},
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
			// Decimals up to each precision's limits, both signs.
			sign := int64(1 - 2*(row%2))
			if null(4) {
				bld.Field(12).AppendNull()
			} else {
				bld.Field(12).(*array.Decimal128Builder).Append(decimal128.FromI64(sign * int64(row*7919%999_999_999)))
			}
			bld.Field(13).(*array.Decimal128Builder).Append(decimal128.FromI64(sign * (int64(row) * 92_233_720_368_547 % 999_999_999_999_999_999)))
			if null(6) {
				bld.Field(14).AppendNull()
			} else {
				big := decimal128.FromI64(int64(row)).Mul(decimal128.FromU64(1e19)).Add(decimal128.FromU64(uint64(row) * 7919))
				if sign < 0 {
					big = big.Negate()
				}
				bld.Field(14).(*array.Decimal128Builder).Append(big)
			}
			bld.Field(15).(*array.Decimal128Builder).Append(decimal128.FromI64(sign * int64(row%100)).Mul(decimal128.FromU64(1e18)))
			if null(9) {
				bld.Field(16).AppendNull()
			} else {
				var u [16]byte
				binary.BigEndian.PutUint64(u[8:], uint64(row)*0x9E3779B97F4A7C15)
				bld.Field(16).(*extensions.UUIDBuilder).Append(u)
			}
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
		groups := write(&arrowOut{pw: annotatingWriter(t, asc, acw), rgBytes: rowGroupTarget}, acw)
		fo, err := newFlatOut(asc, fcw, Options{})
		if err != nil {
			t.Fatal(err)
		}
		write(fo, fcw)
		if groups < 3 {
			t.Fatalf("%d row groups at %d rows or %d bytes, want several", groups, bound.rows, bound.bytes)
		}
		sameFileButIntAnnotation(t, a.Bytes(), f.Bytes())
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
	fo, err := newFlatOut(asc, newCountingWriter(&f), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fo.write(bad); err == nil {
		t.Fatal("flatOut wrote a null into a required column")
	}

	// A decimal too large for its physical type is an error, not a value
	// cut short.
	for _, tc := range []struct {
		field int
		v     decimal128.Num
	}{
		{12, decimal128.FromI64(1 << 40)},
		{13, decimal128.FromU64(1 << 63)},
		{15, decimal128.FromU64(1 << 63).Mul(decimal128.FromU64(1 << 20))},
		{15, decimal128.FromU64(1 << 63).Mul(decimal128.FromU64(1 << 8))}, // fits the bytes but for the sign bit
	} {
		for i := range asc.Fields() {
			switch {
			case i == tc.field:
				bld.Field(i).(*array.Decimal128Builder).Append(tc.v)
			case i == 13:
				bld.Field(i).(*array.Decimal128Builder).Append(decimal128.FromI64(1))
			case i == 0:
				bld.Field(i).(*array.Int64Builder).Append(1)
			case i == 10:
				bld.Field(i).(*array.StringBuilder).Append("n")
			default:
				bld.Field(i).AppendNull()
			}
		}
		rec := bld.NewRecordBatch()
		fo, err := newFlatOut(asc, newCountingWriter(&f), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := fo.write(rec); err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("%s = %s: %v, want does not fit", asc.Field(tc.field).Name, tc.v.BigInt(), err)
		}
		rec.Release()
	}
}

// sameFileButIntAnnotation checks that flat, a file the bridge wrote, holds the
// same bytes before its footer as pq, pqarrow's file of the same batches,
// the same row groups and column chunks (offsets, sizes, encodings,
// statistics), and the same schema, every node (name, repetition, logical
// type, field ID), except that its INT32 columns have no INT(32, signed)
// annotation.
func sameFileButIntAnnotation(t *testing.T, pq, flat []byte) {
	t.Helper()
	dataEnd := func(b []byte) int { return len(b) - 8 - int(binary.LittleEndian.Uint32(b[len(b)-8:])) }
	if !bytes.Equal(pq[:dataEnd(pq)], flat[:dataEnd(flat)]) {
		t.Fatalf("the data before the footers differ (pqarrow %d bytes, ours %d)", dataEnd(pq), dataEnd(flat))
	}
	open := func(b []byte) *file.Reader {
		r, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, f := open(pq), open(flat)
	am, fm := a.MetaData(), f.MetaData()
	if am.NumRows != fm.NumRows || am.NumRowGroups() != fm.NumRowGroups() {
		t.Fatalf("pqarrow: %d rows in %d row groups; ours: %d in %d", am.NumRows, am.NumRowGroups(), fm.NumRows, fm.NumRowGroups())
	}
	chunk := func(md *metadata.FileMetaData, rg, col int) string {
		c, err := md.RowGroup(rg).ColumnChunk(col)
		if err != nil {
			t.Fatal(err)
		}
		st := "no statistics"
		if ok, _ := c.StatsSet(); ok {
			s, err := c.Statistics()
			if err != nil {
				t.Fatal(err)
			}
			e, err := s.Encode()
			if err != nil {
				t.Fatal(err)
			}
			st = fmt.Sprintf("min %x max %x nulls %d", e.Min, e.Max, e.NullCount)
		}
		return fmt.Sprintf("offset %d, %d values, %d/%d bytes, %v, %v, %s", c.FileOffset(), c.NumValues(),
			c.TotalCompressedSize(), c.TotalUncompressedSize(), c.Compression(), c.Encodings(), st)
	}
	as, fs := am.Schema, fm.Schema
	sameNodes(t, as.Root(), fs.Root())
	for col := range as.NumColumns() {
		ac, fc := as.Column(col), fs.Column(col)
		want := ac.LogicalType()
		if ac.PhysicalType() == parquet.Types.Int32 {
			if _, ok := want.(schema.IntLogicalType); ok {
				want = schema.NoLogicalType{}
			}
		}
		if ac.Name() != fc.Name() || ac.PhysicalType() != fc.PhysicalType() || ac.SchemaNode().RepetitionType() != fc.SchemaNode().RepetitionType() ||
			ac.SchemaNode().FieldID() != fc.SchemaNode().FieldID() || !want.Equals(fc.LogicalType()) {
			t.Errorf("column %d: pqarrow %s %s %s id %d, ours %s %s %s id %d (want logical type %s)", col,
				ac.Name(), ac.PhysicalType(), ac.LogicalType(), ac.SchemaNode().FieldID(),
				fc.Name(), fc.PhysicalType(), fc.LogicalType(), fc.SchemaNode().FieldID(), want)
		}
		for rg := range am.NumRowGroups() {
			if x, y := chunk(am, rg, col), chunk(fm, rg, col); x != y {
				t.Errorf("row group %d column %s: pqarrow %s, ours %s", rg, ac.Name(), x, y)
			}
		}
	}
}

// sameNodes requires the Parquet schema trees a (pqarrow's) and f to be
// the same but for f's INT32 columns having no INT(32, signed) annotation.
func sameNodes(t *testing.T, a, f schema.Node) {
	t.Helper()
	want := a.LogicalType()
	if p, ok := a.(*schema.PrimitiveNode); ok && p.PhysicalType() == parquet.Types.Int32 {
		if _, ok := want.(schema.IntLogicalType); ok {
			want = schema.NoLogicalType{}
		}
	}
	if a.Name() != f.Name() || a.Type() != f.Type() || a.RepetitionType() != f.RepetitionType() || a.FieldID() != f.FieldID() || !want.Equals(f.LogicalType()) {
		t.Errorf("schema node %s: pqarrow %s %s %s id %d, ours %s %s %s id %d (want logical type %s)", a.Path(),
			a.Name(), a.RepetitionType(), a.LogicalType(), a.FieldID(), f.Name(), f.RepetitionType(), f.LogicalType(), f.FieldID(), want)
		return
	}
	if ag, ok := a.(*schema.GroupNode); ok {
		fg := f.(*schema.GroupNode)
		if ag.NumFields() != fg.NumFields() {
			t.Errorf("schema node %s: pqarrow %d fields, ours %d", a.Path(), ag.NumFields(), fg.NumFields())
			return
		}
		for i := range ag.NumFields() {
			sameNodes(t, ag.Field(i), fg.Field(i))
		}
	}
}
