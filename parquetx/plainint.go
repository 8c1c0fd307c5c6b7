package parquetx

import (
	"fmt"
	"io"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Every file the bridge writes stores 32-bit integers as plain INT32,
// without the INT(32, signed) annotation pqarrow gives Arrow's int32, as
// Iceberg's Java writer stores them. Iceberg 1.10's vectorized reader
// (Spark's default) cannot read an annotated INT32 column once the table
// has promoted it to long (apache/iceberg#16341, fixed after 1.10.1); a
// plain one it reads. The values, their order and their statistics are the
// same. pqarrow takes no Parquet schema of ours, but it asks an extension
// type for its logical type: the writers are given the data's schema with
// every int32, nested ones included, as plainInt32, and the data re-typed
// to it (the same buffers).

// plainInt32 is int32 stored as plain INT32.
type plainInt32 struct{ arrow.ExtensionBase }

var plainInt32Type = &plainInt32{arrow.ExtensionBase{Storage: arrow.PrimitiveTypes.Int32}}

var _ pqarrow.ExtensionCustomParquetType = plainInt32Type

func (*plainInt32) ExtensionName() string { return "pg2iceberg.plain_int32" }
func (*plainInt32) Serialize() string     { return "" }
func (*plainInt32) ArrayType() reflect.Type {
	return reflect.TypeOf(plainInt32Array{})
}

func (*plainInt32) Deserialize(storage arrow.DataType, _ string) (arrow.ExtensionType, error) {
	if storage.ID() != arrow.INT32 {
		return nil, fmt.Errorf("plain int32 stored as %s", storage)
	}
	return plainInt32Type, nil
}

func (t *plainInt32) ExtensionEquals(o arrow.ExtensionType) bool {
	return o.ExtensionName() == t.ExtensionName()
}

// ParquetLogicalType is none: plain INT32.
func (*plainInt32) ParquetLogicalType() schema.LogicalType { return schema.NoLogicalType{} }

type plainInt32Array struct{ array.ExtensionArrayBase }

// plainInts is t with every int32 in it a plainInt32; changed says whether
// there was one.
func plainInts(t arrow.DataType) (out arrow.DataType, changed bool) {
	switch t := t.(type) {
	case *arrow.Int32Type:
		return plainInt32Type, true
	case *arrow.StructType:
		fields, changed := plainIntFields(t.Fields())
		if !changed {
			return t, false
		}
		return arrow.StructOf(fields...), true
	case *arrow.ListType:
		elem, changed := plainIntFields([]arrow.Field{t.ElemField()})
		if !changed {
			return t, false
		}
		return arrow.ListOfField(elem[0]), true
	case *arrow.MapType:
		kv, changed := plainIntFields([]arrow.Field{t.KeyField(), t.ItemField()})
		if !changed {
			return t, false
		}
		m := arrow.MapOfFields(kv[0], kv[1])
		m.KeysSorted = t.KeysSorted
		return m, true
	}
	return t, false
}

// plainIntFields is fields with plainInts of each one's type.
func plainIntFields(fields []arrow.Field) ([]arrow.Field, bool) {
	out := make([]arrow.Field, len(fields))
	some := false
	for i, f := range fields {
		var changed bool
		f.Type, changed = plainInts(f.Type)
		some = some || changed
		out[i] = f
	}
	return out, some
}

// retype is data as an array of type t, a plainInts of data's type: the
// same buffers, its children re-typed where their type changed.
func retype(data arrow.ArrayData, t arrow.DataType) arrow.Array {
	d := retypeData(data, t)
	defer d.Release()
	return array.MakeFromData(d)
}

func retypeData(data arrow.ArrayData, t arrow.DataType) arrow.ArrayData {
	if arrow.TypeEqual(data.DataType(), t) {
		data.Retain()
		return data
	}
	var children []arrow.ArrayData
	if nt, ok := t.(arrow.NestedType); ok && t.ID() != arrow.EXTENSION {
		for i, f := range nt.Fields() {
			children = append(children, retypeData(data.Children()[i], f.Type))
		}
		defer func() {
			for _, c := range children {
				c.Release()
			}
		}()
	}
	return array.NewData(t, data.Len(), data.Buffers(), children, data.NullN(), data.Offset())
}

// parquetWriter is pqarrow's writer, writing int32 as plain INT32.
type parquetWriter struct {
	*pqarrow.FileWriter
	sc *arrow.Schema // the writer's: the data's schema with plainInts
}

// newParquetWriter returns a pqarrow writer of the table's settings for
// data of schema asc.
func newParquetWriter(asc *arrow.Schema, w io.Writer, props *parquet.WriterProperties) (*parquetWriter, error) {
	fields, _ := plainIntFields(asc.Fields())
	meta := asc.Metadata()
	sc := arrow.NewSchema(fields, &meta)
	pw, err := pqarrow.NewFileWriter(sc, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(dataAlloc)))
	if err != nil {
		return nil, err
	}
	return &parquetWriter{FileWriter: pw, sc: sc}, nil
}

// writeBuffered writes a batch of the data's schema into the open row
// group.
func (p *parquetWriter) writeBuffered(rec arrow.RecordBatch) error {
	cols := make([]arrow.Array, rec.NumCols())
	for i, col := range rec.Columns() {
		cols[i] = retype(col.Data(), p.sc.Field(i).Type)
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	plain := array.NewRecordBatch(p.sc, cols, rec.NumRows())
	defer plain.Release()
	return p.WriteBuffered(plain)
}

// writeColumn writes a of the data's type as the writer's column i, the
// next one of the row group.
func (p *parquetWriter) writeColumn(i int, a arrow.Array) error {
	col := retype(a.Data(), p.sc.Field(i).Type)
	defer col.Release()
	return p.WriteColumnData(col)
}
