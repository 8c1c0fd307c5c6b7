package keyindex

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// A key is the byte encoding of a row's replica identity values, built from
// typed values so that a key read back from a Parquet file equals the key
// built from the source's text form. Each column is a length-prefixed value.

func appendKeyPart(dst, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// The typed key parts, shared by the text, binary and Arrow forms of a
// value. A boolean is its text form, t or f.

func appendKeyBool(dst []byte, v bool) []byte {
	if v {
		return appendKeyPart(dst, []byte("t"))
	}
	return appendKeyPart(dst, []byte("f"))
}

// appendKeyInt encodes every 8-byte key: integers, dates, times and
// timestamps.
func appendKeyInt(dst []byte, v int64) []byte {
	dst = append(dst, 8)
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// appendKeyFloat encodes a float or a double, a float widened exactly.
func appendKeyFloat(dst []byte, v float64) []byte {
	return appendKeyInt(dst, int64(math.Float64bits(v)))
}

func appendKeyDecimal(dst []byte, n decimal128.Num) []byte {
	dst = append(dst, 16)
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.HighBits()))
	return binary.BigEndian.AppendUint64(dst, n.LowBits())
}

// IsEightByte says whether a key column of type dt is always encoded as
// one 8-byte part (see Index).
func IsEightByte(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.TIME64, arrow.TIMESTAMP:
		return true
	}
	return false
}

// AppendText appends the key part of a value in its source text form.
func AppendText(dst []byte, dt arrow.DataType, text []byte) ([]byte, error) {
	switch dt.ID() {
	case arrow.BOOL:
		return appendKeyPart(dst, text), nil
	case arrow.INT32, arrow.INT64:
		v, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("key value %q: not an integer", text)
		}
		return appendKeyInt(dst, v), nil
	case arrow.FLOAT32, arrow.FLOAT64:
		// A float is read as one (not as a double rounded to a float), as
		// mapping.Append reads it: the key equals the one read back.
		size := 64
		if dt.ID() == arrow.FLOAT32 {
			size = 32
		}
		v, err := strconv.ParseFloat(string(text), size)
		if err != nil {
			return nil, fmt.Errorf("key value %q: not a number", text)
		}
		return appendKeyFloat(dst, v), nil
	case arrow.STRING:
		return appendKeyPart(dst, text), nil
	case arrow.BINARY:
		b, err := mapping.ParseBinary(text) // bytea or PostGIS EWKB, as mapping.Append reads it
		if err != nil {
			return nil, fmt.Errorf("key value: %w", err)
		}
		return appendKeyPart(dst, b), nil
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		n, err := mapping.ParseDecimal(text, int(t.Precision), int(t.Scale))
		if err != nil {
			return nil, fmt.Errorf("key value %q: %w", text, err)
		}
		return appendKeyDecimal(dst, n), nil
	case arrow.DATE32:
		d, err := mapping.ParseDate(text)
		if err != nil {
			return nil, fmt.Errorf("key value %q: %w", text, err)
		}
		return appendKeyInt(dst, int64(d)), nil
	case arrow.TIME64:
		us, err := mapping.ParseTime(text)
		if err != nil {
			return nil, fmt.Errorf("key value %q: %w", text, err)
		}
		return appendKeyInt(dst, us), nil
	case arrow.TIMESTAMP:
		us, err := mapping.ParseTimestamp(text, dt.(*arrow.TimestampType).TimeZone != "")
		if err != nil {
			return nil, fmt.Errorf("key value %q: %w", text, err)
		}
		return appendKeyInt(dst, us), nil
	case arrow.EXTENSION:
		if _, ok := dt.(*extensions.UUIDType); ok {
			u, err := uuid.ParseBytes(text)
			if err != nil {
				return nil, fmt.Errorf("key value %q: not a uuid", text)
			}
			return appendKeyPart(dst, u[:]), nil
		}
	}
	return nil, fmt.Errorf("type %s cannot be part of a key yet", dt)
}

// AppendArray appends the key part of arr[i].
func AppendArray(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return nil, fmt.Errorf("key column %s holds NULL", arr.DataType())
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return appendKeyBool(dst, a.Value(i)), nil
	case *array.Int32:
		return appendKeyInt(dst, int64(a.Value(i))), nil
	case *array.Int64:
		return appendKeyInt(dst, a.Value(i)), nil
	case *array.Float32:
		return appendKeyFloat(dst, float64(a.Value(i))), nil
	case *array.Float64:
		return appendKeyFloat(dst, a.Value(i)), nil
	case *array.String:
		return appendKeyPart(dst, []byte(a.Value(i))), nil
	case *array.Binary:
		return appendKeyPart(dst, a.Value(i)), nil
	case *array.Decimal128:
		return appendKeyDecimal(dst, a.Value(i)), nil
	case *array.Date32:
		return appendKeyInt(dst, int64(a.Value(i))), nil
	case *array.Time64:
		return appendKeyInt(dst, int64(a.Value(i))), nil
	case *array.Timestamp:
		return appendKeyInt(dst, int64(a.Value(i))), nil
	case *extensions.UUIDArray:
		u := a.Value(i)
		return appendKeyPart(dst, u[:]), nil
	case *array.FixedSizeBinary:
		return appendKeyPart(dst, a.Value(i)), nil
	}
	return nil, fmt.Errorf("type %s cannot be part of a key yet", arr.DataType())
}

// Rows of a binary copy (COPY ... (FORMAT binary), chosen by replication
// for tables whose every column mapping.BinaryReadable accepts) arrive as
// tuples of Binary datums. Their keys are built here from the same decoded
// values the text path parses, so a key equals the one AppendText builds
// from the value's text form (the stream's changes find copied rows) and
// the one AppendArray reads back.

// AppendBinary appends the key part of a value of type oid in its binary
// form.
func AppendBinary(dst []byte, dt arrow.DataType, oid uint32, data []byte) ([]byte, error) {
	if oid == mapping.OIDInt8 && dt.ID() == arrow.INT64 && len(data) == 8 {
		// A bigint's binary form is its key part's value bytes.
		return append(append(dst, 8), data...), nil
	}
	v, err := mapping.ReadBinary(oid, dt, data)
	if err != nil {
		return nil, fmt.Errorf("key value: %w", err)
	}
	switch dt.ID() {
	case arrow.BOOL:
		return appendKeyBool(dst, v.Int != 0), nil
	case arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIMESTAMP:
		return appendKeyInt(dst, v.Int), nil
	case arrow.FLOAT32, arrow.FLOAT64:
		return appendKeyFloat(dst, v.Float), nil
	case arrow.DECIMAL128:
		return appendKeyDecimal(dst, v.Decimal), nil
	case arrow.STRING, arrow.BINARY, arrow.EXTENSION: // EXTENSION: uuid, the only one ReadBinary reads
		return appendKeyPart(dst, v.Bytes), nil
	}
	return nil, fmt.Errorf("type %s cannot be part of a key yet", dt)
}
