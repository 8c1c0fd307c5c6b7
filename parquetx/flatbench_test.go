package parquetx

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// wideBatches returns n batches of BatchRows rows of a table like the
// bench's wide one: a key, unique text and uuid columns (which fall back
// from dictionary to plain encoding), low-cardinality ones, numbers,
// dates and times, and the same columns again with a null in every 5th
// row.
func wideBatches(tb testing.TB, n int) (*arrow.Schema, []arrow.RecordBatch) {
	var fields []icego.NestedField
	add := func(name string, t icego.Type, required bool) {
		fields = append(fields, icego.NestedField{ID: len(fields) + 1, Name: name, Type: t, Required: required})
	}
	add("id", icego.PrimitiveTypes.Int64, true)
	for _, suffix := range []string{"", "_n"} {
		add("b"+suffix, icego.PrimitiveTypes.Bool, false)
		add("i4"+suffix, icego.PrimitiveTypes.Int32, false)
		add("i8"+suffix, icego.PrimitiveTypes.Int64, false)
		add("f8"+suffix, icego.PrimitiveTypes.Float64, false)
		add("d12"+suffix, icego.DecimalTypeOf(12, 2), false)
		add("d38"+suffix, icego.DecimalTypeOf(38, 10), false)
		add("t"+suffix, icego.PrimitiveTypes.String, false)
		add("bin"+suffix, icego.PrimitiveTypes.Binary, false)
		add("day"+suffix, icego.PrimitiveTypes.Date, false)
		add("ts"+suffix, icego.PrimitiveTypes.TimestampTz, false)
		add("u"+suffix, icego.PrimitiveTypes.UUID, false)
		add("j"+suffix, icego.PrimitiveTypes.String, false)
	}
	asc, err := table.SchemaToArrowSchema(icego.NewSchema(1, fields...), nil, true, false)
	if err != nil {
		tb.Fatal(err)
	}
	bld := array.NewRecordBuilder(dataAlloc, asc)
	defer bld.Release()
	var recs []arrow.RecordBatch
	row := 0
	for range n {
		for range BatchRows {
			bld.Field(0).(*array.Int64Builder).Append(int64(row))
			for half := range 2 {
				f := 1 + 12*half
				if half == 1 && row%5 == 0 {
					for i := range 12 {
						bld.Field(f + i).AppendNull()
					}
					continue
				}
				h := md5.Sum(binary.BigEndian.AppendUint64(nil, uint64(row)))
				bld.Field(f).(*array.BooleanBuilder).Append(row%3 == 0)
				bld.Field(f + 1).(*array.Int32Builder).Append(int32(row * 7919))
				bld.Field(f + 2).(*array.Int64Builder).Append(int64(row) * 1_000_003)
				bld.Field(f + 3).(*array.Float64Builder).Append(float64(row) / 7)
				bld.Field(f + 4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(row) * 13))
				bld.Field(f + 5).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(row) * 1_000_000_007))
				bld.Field(f + 6).(*array.StringBuilder).Append(hex.EncodeToString(h[:]))
				bld.Field(f + 7).(*array.BinaryBuilder).Append(h[:8])
				bld.Field(f + 8).(*array.Date32Builder).Append(arrow.Date32(row % 20000))
				bld.Field(f + 9).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(row) * 1_000_003))
				bld.Field(f + 10).(*extensions.UUIDBuilder).Append(h)
				bld.Field(f + 11).(*array.StringBuilder).Append(`{"k": ` + hex.EncodeToString(h[:4]) + `}`)
			}
			row++
		}
		recs = append(recs, bld.NewRecordBatch())
	}
	return asc, recs
}

// BenchmarkFlatWrite writes 40 batches (327,680 rows) of the wide table
// through flatOut into nothing: the Parquet side of a mirror file of the
// bench's wide workload.
func BenchmarkFlatWrite(b *testing.B) {
	if err := UseFastZstd(); err != nil {
		b.Fatal(err)
	}
	asc, recs := wideBatches(b, 40)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		o, err := newFlatOut(asc, newCountingWriter(io.Discard), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := o.write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := o.close(); err != nil {
			b.Fatal(err)
		}
	}
}
