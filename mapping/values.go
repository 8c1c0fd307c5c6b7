package mapping

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
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

func valueErr(text []byte, b array.Builder, reason string) error {
	v := text
	if len(v) > 64 {
		v = append(v[:61:61], "..."...)
	}
	return &ValueError{Value: string(v), Target: b.Type().String(), Reason: reason}
}

// Append appends the value whose text output form is text to b; nil text
// appends NULL. The builder's type must be the Arrow form of the Iceberg
// type For returned for the column.
func Append(b array.Builder, text []byte) error {
	if text == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		switch string(text) {
		case "t":
			b.Append(true)
		case "f":
			b.Append(false)
		default:
			return valueErr(text, b, "not a boolean")
		}
	case *array.Int32Builder:
		v, err := strconv.ParseInt(string(text), 10, 32)
		if err != nil {
			return valueErr(text, b, "not a 32-bit integer")
		}
		b.Append(int32(v))
	case *array.Int64Builder:
		// oid is unsigned 32-bit; int8 signed 64-bit: both fit int64.
		v, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return valueErr(text, b, "not a 64-bit integer")
		}
		b.Append(v)
	case *array.Float32Builder:
		v, err := strconv.ParseFloat(string(text), 32)
		if err != nil {
			return valueErr(text, b, "not a float4")
		}
		b.Append(float32(v))
	case *array.Float64Builder:
		v, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return valueErr(text, b, "not a float8")
		}
		b.Append(v)
	case *array.Decimal128Builder:
		t := b.Type().(*arrow.Decimal128Type)
		n, err := ParseDecimal(text, int(t.Precision), int(t.Scale))
		if err != nil {
			return valueErr(text, b, err.Error())
		}
		b.Append(n)
	case *array.StringBuilder:
		if !utf8.Valid(text) {
			return valueErr(text, b, "not valid UTF-8")
		}
		b.BinaryBuilder.Append(text)
	case *array.BinaryBuilder:
		v, err := ParseBytea(text)
		if err != nil {
			return valueErr(text, b, err.Error())
		}
		b.Append(v)
	case *extensions.UUIDBuilder:
		u, err := uuid.ParseBytes(text)
		if err != nil {
			return valueErr(text, b, "not a uuid")
		}
		b.Append(u)
	case *array.Date32Builder:
		d, err := ParseDate(text)
		if err != nil {
			return valueErr(text, b, err.Error())
		}
		b.Append(arrow.Date32(d))
	case *array.Time64Builder:
		us, err := ParseTime(text)
		if err != nil {
			return valueErr(text, b, err.Error())
		}
		b.Append(arrow.Time64(us))
	case *array.TimestampBuilder:
		withZone := b.Type().(*arrow.TimestampType).TimeZone != ""
		us, err := ParseTimestamp(text, withZone)
		if err != nil {
			return valueErr(text, b, err.Error())
		}
		b.Append(arrow.Timestamp(us))
	default:
		return fmt.Errorf("no value decoder for arrow type %s", b.Type())
	}
	return nil
}

// ParseDecimal parses a numeric's text form into an unscaled 128-bit
// integer with the given scale, failing rather than rounding.
func ParseDecimal(text []byte, precision, scale int) (decimal128.Num, error) {
	s := string(text)
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	if intPart == "" && frac == "" {
		return decimal128.Num{}, fmt.Errorf("not a number")
	}
	// Trailing zeros beyond the scale carry no information.
	for len(frac) > scale && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(frac) > scale {
		return decimal128.Num{}, fmt.Errorf("more than %d digits after the point", scale)
	}
	digits := intPart + frac
	for i := len(frac); i < scale; i++ {
		digits += "0"
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return decimal128.Num{}, fmt.Errorf("not a number")
		}
	}
	// Leading zeros do not count towards precision.
	trimmed := digits
	for len(trimmed) > 1 && trimmed[0] == '0' {
		trimmed = trimmed[1:]
	}
	if len(trimmed) > precision {
		return decimal128.Num{}, fmt.Errorf("more than %d significant digits", precision)
	}
	var v big.Int
	v.SetString(digits, 10)
	if neg {
		v.Neg(&v)
	}
	return decimal128.FromBigInt(&v), nil
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
