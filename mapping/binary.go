package mapping

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// Binary forms. Besides its text output form, PostgreSQL has a binary
// (send/recv) form for every built-in type, which COPY ... (FORMAT binary)
// and pgoutput's binary mode send. For the types below it is cheaper to
// produce and to read than the text, and ReadBinary turns it into the very
// value Append reads from the text form (the same Arrow value, the same
// errors for values Iceberg cannot hold), so the two forms are
// interchangeable.

// binaryOIDs are the types ReadBinary reads, under their default mapping.
var binaryOIDs = map[uint32]bool{
	OIDBool: true, OIDInt2: true, OIDInt4: true, OIDInt8: true,
	OIDFloat4: true, OIDFloat8: true,
	OIDText: true, OIDVarchar: true, OIDBPChar: true, OIDBytea: true,
	OIDDate: true, OIDTimestamp: true, OIDTimestampTZ: true, OIDUUID: true,
	OIDNumeric: true, // when mapped to a decimal (see BinaryReadable)
}

// BinaryReadable reports whether ReadBinary reads c's values: c has the
// default mapping (no override) and a built-in type whose binary form it
// knows; a numeric only when it maps to a decimal (an unconstrained
// numeric becomes Postgres's text, which only the text form gives).
func BinaryReadable(table string, c Column) bool {
	if c.Rule != nil || !binaryOIDs[c.TypeOID] {
		return false
	}
	if c.TypeOID == OIDNumeric {
		t, err := For(table, c)
		_, dec := t.(iceberg.DecimalType)
		return err == nil && dec
	}
	return true
}

// Scalar is a value ReadBinary decoded, in the field its Arrow type uses.
type Scalar struct {
	// Int holds booleans (0 or 1), integers, dates (days since 1970-01-01)
	// and timestamps (microseconds since 1970-01-01 00:00:00 UTC).
	Int   int64
	Float float64 // float and double values (a float widened exactly)
	// Bytes holds strings, binary values and UUIDs (16 bytes); it aliases
	// the data read.
	Bytes   []byte
	Decimal decimal128.Num
}

// Microseconds and days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const (
	pgEpochDays   = 10957
	pgEpochMicros = pgEpochDays * usPerDay
)

// ReadBinary decodes data, the binary form of a non-NULL value of the type
// oid (one BinaryReadable accepts), into the value Append appends for the
// same value's text form to a builder of type dt; a value Append refuses
// is refused here too, as a *ValueError.
func ReadBinary(oid uint32, dt arrow.DataType, data []byte) (Scalar, error) {
	var s Scalar
	err := readBinary(&s, oid, dt, data)
	return s, err
}

// readBinary is ReadBinary into *s.
func readBinary(s *Scalar, oid uint32, dt arrow.DataType, data []byte) error {
	id := dt.ID()
	switch oid {
	case OIDBool:
		if id != arrow.BOOL {
			break
		}
		if len(data) != 1 || data[0] > 1 {
			return binaryErr(data, dt, "not a boolean")
		}
		s.Int = int64(data[0])
		return nil
	case OIDInt2, OIDInt4, OIDInt8:
		if id != arrow.INT32 && id != arrow.INT64 {
			break
		}
		switch {
		case oid == OIDInt2 && len(data) == 2:
			s.Int = int64(int16(binary.BigEndian.Uint16(data)))
		case oid == OIDInt4 && len(data) == 4:
			s.Int = int64(int32(binary.BigEndian.Uint32(data)))
		case oid == OIDInt8 && len(data) == 8:
			s.Int = int64(binary.BigEndian.Uint64(data))
		default:
			return sizeErr(data, dt)
		}
		if id == arrow.INT32 && int64(int32(s.Int)) != s.Int {
			return binaryErr(data, dt, "not a 32-bit integer")
		}
		return nil
	case OIDFloat4:
		if id != arrow.FLOAT32 && id != arrow.FLOAT64 {
			break
		}
		if len(data) != 4 {
			return sizeErr(data, dt)
		}
		s.Float = widenFloat4(math.Float32frombits(binary.BigEndian.Uint32(data)), id == arrow.FLOAT64)
		return nil
	case OIDFloat8:
		if id != arrow.FLOAT64 {
			break
		}
		if len(data) != 8 {
			return sizeErr(data, dt)
		}
		s.Float = math.Float64frombits(binary.BigEndian.Uint64(data))
		if s.Float != s.Float {
			s.Float = math.NaN() // the NaN strconv reads from "NaN"
		}
		return nil
	case OIDText, OIDVarchar, OIDBPChar:
		if id != arrow.STRING {
			break
		}
		if !utf8.Valid(data) {
			return valueErr(data, dt, "not valid UTF-8")
		}
		s.Bytes = data
		return nil
	case OIDBytea:
		if id != arrow.BINARY {
			break
		}
		s.Bytes = data
		return nil
	case OIDUUID:
		if !isUUID(dt) {
			break
		}
		if len(data) != 16 {
			return sizeErr(data, dt)
		}
		s.Bytes = data
		return nil
	case OIDDate:
		if id != arrow.DATE32 {
			break
		}
		var err error
		s.Int, err = readDate(dt, data)
		return err
	case OIDTimestamp, OIDTimestampTZ:
		if id != arrow.TIMESTAMP {
			break
		}
		var err error
		s.Int, err = readTimestamp(oid, dt.(*arrow.TimestampType), data)
		return err
	case OIDNumeric:
		if id != arrow.DECIMAL128 {
			break
		}
		var err error
		s.Decimal, err = readNumeric(dt.(*arrow.Decimal128Type), data)
		return err
	}
	return fmt.Errorf("no binary reader for type oid %d into arrow type %s", oid, dt)
}

// readDate reads a date into a date32: days since 1970.
func readDate(dt arrow.DataType, data []byte) (int64, error) {
	if len(data) != 4 {
		return 0, sizeErr(data, dt)
	}
	d := int64(int32(binary.BigEndian.Uint32(data)))
	if d == math.MaxInt32 || d == math.MinInt32 {
		return 0, infinityErr(dt, d > 0)
	}
	if d += pgEpochDays; d > math.MaxInt32 {
		return 0, binaryErr(data, dt, "out of range")
	}
	return d, nil
}

// readNumeric reads a numeric into a decimal of type dt.
func readNumeric(dt *arrow.Decimal128Type, data []byte) (decimal128.Num, error) {
	var buf [64]byte
	text, err := numericText(buf[:0], data)
	if err != nil {
		return decimal128.Num{}, binaryErr(data, dt, err.Error())
	}
	n, err := ParseDecimal(text, int(dt.Precision), int(dt.Scale))
	if err != nil {
		return decimal128.Num{}, valueErr(text, dt, err.Error())
	}
	return n, nil
}

// readTimestamp reads a timestamp or timestamptz (oid) into a timestamp
// of type dt: microseconds since 1970.
func readTimestamp(oid uint32, dt *arrow.TimestampType, data []byte) (int64, error) {
	if len(data) != 8 {
		return 0, sizeErr(data, dt)
	}
	if withZone := dt.TimeZone != ""; withZone != (oid == OIDTimestampTZ) {
		return 0, binaryErr(data, dt, "timestamp and timestamptz are not interchangeable")
	}
	us := int64(binary.BigEndian.Uint64(data))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return 0, infinityErr(dt, us > 0)
	}
	if us > math.MaxInt64-pgEpochMicros {
		return 0, binaryErr(data, dt, errTimestampRange.Error())
	}
	return us + pgEpochMicros, nil
}

// AppendBinary appends the value whose binary form is data (see
// ReadBinary) to b, which must be the builder Append would get for it. A
// value that does not fit leaves b as it was.
func AppendBinary(b array.Builder, oid uint32, data []byte) error {
	// The commonest columns of a copy first, read as readBinary reads
	// them but without a Scalar in between.
	switch b := b.(type) {
	case *array.Int64Builder:
		if oid == OIDInt8 && len(data) == 8 {
			b.Append(int64(binary.BigEndian.Uint64(data)))
			return nil
		}
	case *array.Int32Builder:
		if oid == OIDInt4 && len(data) == 4 {
			b.Append(int32(binary.BigEndian.Uint32(data)))
			return nil
		}
	case *array.StringBuilder:
		if (oid == OIDText || oid == OIDVarchar || oid == OIDBPChar) && utf8.Valid(data) {
			b.BinaryBuilder.Append(data)
			return nil
		}
	case *array.TimestampBuilder:
		if oid == OIDTimestamp || oid == OIDTimestampTZ {
			us, err := readTimestamp(oid, b.Type().(*arrow.TimestampType), data)
			if err != nil {
				return err
			}
			b.Append(arrow.Timestamp(us))
			return nil
		}
	}
	var s Scalar
	if err := readBinary(&s, oid, b.Type(), data); err != nil {
		return err
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(s.Int != 0)
	case *array.Int32Builder:
		b.Append(int32(s.Int))
	case *array.Int64Builder:
		b.Append(s.Int)
	case *array.Float32Builder:
		b.Append(float32(s.Float))
	case *array.Float64Builder:
		b.Append(s.Float)
	case *array.StringBuilder:
		b.BinaryBuilder.Append(s.Bytes)
	case *array.BinaryBuilder:
		b.Append(s.Bytes)
	case *extensions.UUIDBuilder:
		b.Append([16]byte(s.Bytes))
	case *array.Date32Builder:
		b.Append(arrow.Date32(s.Int))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(s.Int))
	case *array.Decimal128Builder:
		b.Append(s.Decimal)
	default:
		return fmt.Errorf("no binary reader into %T", b)
	}
	return nil
}

// widenFloat4 returns what the text form of f, which PostgreSQL prints in
// the fewest digits that read back as f (extra_float_digits > 0), reads as
// in a float (exactly f) or, with double, in a double.
func widenFloat4(f float32, double bool) float64 {
	switch {
	case f != f:
		if double {
			return math.NaN()
		}
		return float64(float32(math.NaN())) // the NaN parseFloat32 gives
	case !double || math.IsInf(float64(f), 0):
		return float64(f)
	}
	var buf [32]byte
	// A finite number printed by AppendFloat always reads back.
	v, _ := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], float64(f), 'g', -1, 32)), 64)
	return v
}

func isUUID(dt arrow.DataType) bool {
	_, ok := dt.(*extensions.UUIDType)
	return ok
}

// binaryErr is valueErr for a value in binary form: shown in hex.
func binaryErr(data []byte, dt arrow.DataType, reason string) error {
	v := data[:min(len(data), 30)]
	return valueErr([]byte(`\x`+hex.EncodeToString(v)), dt, reason)
}

func sizeErr(data []byte, dt arrow.DataType) error {
	return binaryErr(data, dt, fmt.Sprintf("a binary form of %d bytes", len(data)))
}

// infinityErr refuses ±infinity as Append does its text form.
func infinityErr(dt arrow.DataType, positive bool) error {
	text := []byte("-infinity")
	if positive {
		text = text[1:]
	}
	return valueErr(text, dt, special(text).Error())
}

// numericText appends the text form PostgreSQL prints (numeric_out) for a
// numeric's binary form: int16 ndigits, int16 weight, uint16 sign, int16
// dscale, then ndigits base-10000 digits, the first of weight 10000^weight.
func numericText(dst, data []byte) ([]byte, error) {
	if len(data) < 8 {
		return nil, errors.New("numeric shorter than its header")
	}
	ndigits := int(int16(binary.BigEndian.Uint16(data)))
	weight := int(int16(binary.BigEndian.Uint16(data[2:])))
	sign := binary.BigEndian.Uint16(data[4:])
	dscale := int(int16(binary.BigEndian.Uint16(data[6:])))
	if ndigits < 0 || len(data) != 8+2*ndigits || dscale < 0 {
		return nil, errors.New("malformed numeric")
	}
	digit := func(i int) int { // base-10000 digit i (weight - i), 0 beyond those sent
		if i < 0 || i >= ndigits {
			return 0
		}
		return int(binary.BigEndian.Uint16(data[8+2*i:]))
	}
	for i := range ndigits {
		if digit(i) > 9999 {
			return nil, errors.New("malformed numeric")
		}
	}
	switch sign {
	case 0x0000:
	case 0x4000:
		dst = append(dst, '-')
	case 0xC000:
		return append(dst, "NaN"...), nil
	case 0xD000:
		return append(dst, "Infinity"...), nil
	case 0xF000:
		return append(dst, "-Infinity"...), nil
	default:
		return nil, errors.New("malformed numeric")
	}
	if weight < 0 {
		dst = append(dst, '0')
	}
	for i := 0; i <= weight; i++ {
		if i == 0 {
			dst = strconv.AppendInt(dst, int64(digit(0)), 10)
		} else {
			dst = appendDigits4(dst, digit(i))
		}
	}
	if dscale > 0 {
		dst = append(dst, '.')
		end := len(dst) + dscale
		for i := weight + 1; len(dst) < end; i++ {
			dst = appendDigits4(dst, digit(i))
		}
		dst = dst[:end]
	}
	return dst, nil
}

func appendDigits4(dst []byte, d int) []byte {
	return append(dst, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
}
