package mapping

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/google/uuid"
)

// ValueError reports a source value that cannot be represented exactly in
// its column's Iceberg type. Callers add the table, column and key.
type ValueError struct {
	Value  string // the value, shortened to 64 bytes
	Target string // the Arrow type it was meant for
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("value %q does not fit %s: %s", e.Value, e.Target, e.Reason)
}

func valueErr(text []byte, dt arrow.DataType, reason string) error {
	v := text
	if len(v) > 64 {
		v = append(v[:61:61], "..."...)
	}
	return &ValueError{Value: string(v), Target: dt.String(), Reason: reason}
}

// Append appends the value whose text output form is text to b; nil text
// appends NULL. The builder's type must be the Arrow form of the Iceberg
// type For returned for the column. A value that does not fit is a
// *ValueError and leaves b as it was.
//
// The builder's type decides how the text is read, with two cases told
// apart by the text itself, exactly, because PostgreSQL's output forms
// differ: a binary value is bytea (`\x...`) or PostGIS hex EWKB (hex digits
// only), and a struct is a composite (`(...)`) or an interval (never starts
// with '(').
func Append(b array.Builder, text []byte) error {
	if text == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		v, err := parseBool(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.Int32Builder:
		v, err := parseInt32(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.Int64Builder:
		v, err := parseInt64(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.StringBuilder:
		if !utf8.Valid(text) {
			return valueErr(text, b.Type(), "not valid UTF-8")
		}
		b.BinaryBuilder.Append(text)
	case *array.Float32Builder:
		v, err := parseFloat32(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.Float64Builder:
		v, err := parseFloat64(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.Decimal128Builder:
		t := b.Type().(*arrow.Decimal128Type)
		v, err := ParseDecimal(text, int(t.Precision), int(t.Scale))
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(v)
	case *array.TimestampBuilder:
		us, err := ParseTimestamp(text, b.Type().(*arrow.TimestampType).TimeZone != "")
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(arrow.Timestamp(us))
	case *array.Date32Builder:
		d, err := ParseDate(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(arrow.Date32(d))
	case *array.Time64Builder:
		us, err := ParseTime(text)
		if err != nil {
			return valueErr(text, b.Type(), err.Error())
		}
		b.Append(arrow.Time64(us))
	case *extensions.UUIDBuilder:
		u, err := uuid.ParseBytes(text)
		if err != nil {
			return valueErr(text, b.Type(), "not a uuid")
		}
		b.Append(u)
	default:
		// Nested and rarer types: through a Go value (boxed, so allocated).
		v, err := decodeValue(b.Type(), text)
		if err != nil {
			var unknown *noDecoderError
			if errors.As(err, &unknown) {
				return err
			}
			return valueErr(text, b.Type(), err.Error())
		}
		put(b, v)
	}
	return nil
}

// noDecoderError reports a builder type Append has no decoder for: a
// programming error, not a bad value.
type noDecoderError struct{ dt arrow.DataType }

func (e *noDecoderError) Error() string {
	return fmt.Sprintf("no value decoder for arrow type %s", e.dt)
}

// decodeValue turns the text form of a non-NULL value of Arrow type dt into
// the Go value put appends: bool, int32, int64, float32, float64,
// decimal128.Num, string, []byte, uuid.UUID, arrow.Date32, arrow.Time64,
// arrow.Timestamp; []any for lists and structs (nil elements are NULL);
// []mapEntry for maps.
func decodeValue(dt arrow.DataType, text []byte) (any, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return parseBool(text)
	case *arrow.Int32Type:
		return parseInt32(text)
	case *arrow.Int64Type:
		return parseInt64(text)
	case *arrow.Float32Type:
		return parseFloat32(text)
	case *arrow.Float64Type:
		return parseFloat64(text)
	case *arrow.Decimal128Type:
		return ParseDecimal(text, int(t.Precision), int(t.Scale))
	case *arrow.StringType:
		if !utf8.Valid(text) {
			return nil, errors.New("not valid UTF-8")
		}
		return string(text), nil
	case *arrow.BinaryType:
		return ParseBinary(text)
	case *extensions.UUIDType:
		u, err := uuid.ParseBytes(text)
		if err != nil {
			return nil, errors.New("not a uuid")
		}
		return u, nil
	case *arrow.Date32Type:
		d, err := ParseDate(text)
		return arrow.Date32(d), err
	case *arrow.Time64Type:
		us, err := ParseTime(text)
		return arrow.Time64(us), err
	case *arrow.TimestampType:
		us, err := ParseTimestamp(text, t.TimeZone != "")
		return arrow.Timestamp(us), err
	case *arrow.ListType:
		return decodeList(t, text)
	case *arrow.StructType:
		return decodeStruct(t, text)
	case *arrow.MapType:
		return decodeMap(t, text)
	}
	return nil, &noDecoderError{dt: dt}
}

// put appends a value decodeValue returned; it cannot fail.
func put(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *extensions.UUIDBuilder:
		b.Append(v.(uuid.UUID))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.Time64Builder:
		b.Append(v.(arrow.Time64))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.ListBuilder:
		b.Append(true)
		for _, e := range v.([]any) {
			put(b.ValueBuilder(), e)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i, f := range v.([]any) {
			put(b.FieldBuilder(i), f)
		}
	case *array.MapBuilder:
		b.Append(true)
		for _, e := range v.([]mapEntry) {
			put(b.KeyBuilder(), e.key)
			put(b.ItemBuilder(), e.value)
		}
	default:
		panic(fmt.Sprintf("mapping: put into %T", b))
	}
}

func parseBool(text []byte) (bool, error) {
	switch string(text) {
	case "t":
		return true, nil
	case "f":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

func parseInt32(text []byte) (int32, error) {
	v, ok := parseInt(text, 32)
	if !ok {
		return 0, errors.New("not a 32-bit integer")
	}
	return int32(v), nil
}

func parseFloat32(text []byte) (float32, error) {
	v, err := strconv.ParseFloat(string(text), 32)
	if err != nil {
		return 0, errors.New("not a float4")
	}
	return float32(v), nil
}

func parseFloat64(text []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, errors.New("not a float8")
	}
	return v, nil
}

// parseInt64 reads int8 and oid (unsigned 32-bit): both fit int64.
func parseInt64(text []byte) (int64, error) {
	v, ok := parseInt(text, 64)
	if !ok {
		return 0, errors.New("not a 64-bit integer")
	}
	return v, nil
}

// parseInt reads what strconv.ParseInt(string(text), 10, bitSize) accepts
// (an optional sign, then decimal digits, within range) without the
// string conversion.
func parseInt(text []byte, bitSize uint) (int64, bool) {
	neg := false
	if len(text) > 0 && (text[0] == '+' || text[0] == '-') {
		neg = text[0] == '-'
		text = text[1:]
	}
	if len(text) == 0 {
		return 0, false
	}
	limit := uint64(1) << (bitSize - 1) // magnitude of the most negative value
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' || n > limit/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true
	}
	if n == limit {
		return 0, false
	}
	return int64(n), true
}

// ParseDecimal parses a numeric's text form into an unscaled 128-bit
// integer with the given scale, failing rather than rounding. It reads the
// digits straight into the 128-bit value: no allocation.
func ParseDecimal(text []byte, precision, scale int) (decimal128.Num, error) {
	switch string(text) {
	case "NaN", "Infinity", "-Infinity":
		return decimal128.Num{}, fmt.Errorf("not a number: %s has no decimal equivalent (map the column to string to keep it)", text)
	}
	s := text
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac := s, s[len(s):]
	if i := bytes.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
	}
	if len(intPart) == 0 && len(frac) == 0 {
		return decimal128.Num{}, fmt.Errorf("not a number")
	}
	// Trailing zeros beyond the scale carry no information.
	for len(frac) > scale && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(frac) > scale {
		return decimal128.Num{}, fmt.Errorf("more than %d digits after the point", scale)
	}
	// The unscaled value's digits are intPart, frac and pad zeros.
	pad := max(scale-len(frac), 0)
	total, lead, i := len(intPart)+len(frac)+pad, 0, 0
	for _, part := range [2][]byte{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return decimal128.Num{}, fmt.Errorf("not a number")
			}
			if c == '0' && lead == i {
				lead++
			}
			i++
		}
	}
	// Leading zeros do not count towards precision.
	sig := total - lead
	if lead == i {
		sig = min(total, 1) // all zeros: one significant digit
	}
	if sig > precision {
		return decimal128.Num{}, fmt.Errorf("more than %d significant digits", precision)
	}
	if sig > 38 { // beyond 128 bits
		return decimal128.Num{}, fmt.Errorf("more than 38 significant digits")
	}
	var hi, lo uint64
	mul10 := func(d uint64) {
		h, l := bits.Mul64(lo, 10)
		var carry uint64
		lo, carry = bits.Add64(l, d, 0)
		hi = hi*10 + h + carry
	}
	for _, part := range [2][]byte{intPart, frac} {
		for _, c := range part {
			mul10(uint64(c - '0'))
		}
	}
	for range pad {
		mul10(0)
	}
	v := decimal128.New(int64(hi), lo)
	if neg {
		v = v.Negate()
	}
	return v, nil
}

// ParseBytea decodes bytea's hex output form (\x0a1b...).
func ParseBytea(text []byte) ([]byte, error) {
	if len(text) < 2 || text[0] != '\\' || text[1] != 'x' {
		return nil, fmt.Errorf("bytea not in hex form (set bytea_output = hex)")
	}
	out := make([]byte, hex.DecodedLen(len(text)-2))
	if _, err := hex.Decode(out, text[2:]); err != nil {
		return nil, fmt.Errorf("bad bytea hex: %w", err)
	}
	return out, nil
}

// ParseBinary decodes the text form of a value of a type mapped to binary:
// bytea's hex form (\x...) or PostGIS's hex EWKB, told apart by the
// leading backslash that only bytea has.
func ParseBinary(text []byte) ([]byte, error) {
	if len(text) > 0 && text[0] == '\\' {
		return ParseBytea(text)
	}
	b, err := ParseEWKB(text)
	if err != nil {
		return nil, fmt.Errorf("neither bytea in hex form (\\x...) nor PostGIS hex EWKB: %w", err)
	}
	return b, nil
}

// AppendWallTime appends a timestamp without time zone, read as wall-clock
// time in loc, to a timestamptz builder (a timestamptz rule); to any other
// builder it is Append.
func AppendWallTime(b array.Builder, text []byte, loc *time.Location) error {
	tb, ok := b.(*array.TimestampBuilder)
	if !ok || text == nil || tb.Type().(*arrow.TimestampType).TimeZone == "" {
		return Append(b, text)
	}
	wall, err := ParseTimestamp(text, false)
	if err != nil {
		return valueErr(text, tb.Type(), err.Error())
	}
	tb.Append(arrow.Timestamp(WallToUTC(wall, loc)))
	return nil
}
