package mapping_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in               string
		precision, scale int
		want             string // unscaled value
		wantErr          string
	}{
		{in: "12345678.90", precision: 10, scale: 2, want: "1234567890"},
		{in: "0", precision: 1, scale: 0, want: "0"},
		{in: "-0", precision: 1, scale: 0, want: "0"},
		{in: "0.00", precision: 3, scale: 2, want: "0"},
		{in: "1.5", precision: 10, scale: 2, want: "150"},
		{in: "1", precision: 10, scale: 2, want: "100"},
		{in: "1.", precision: 10, scale: 2, want: "100"},
		{in: ".5", precision: 10, scale: 2, want: "50"},
		{in: "-1.25", precision: 3, scale: 2, want: "-125"},
		{in: "+1.25", precision: 3, scale: 2, want: "125"},
		{in: "-0.01", precision: 10, scale: 2, want: "-1"},
		// Trailing zeros beyond the scale carry no information.
		{in: "1.2500", precision: 3, scale: 2, want: "125"},
		{in: "123.4500", precision: 10, scale: 4, want: "1234500"}, // PG's numeric(10,4) text
		{in: "7.000000000", precision: 1, scale: 0, want: "7"},
		// Leading zeros are not significant.
		{in: "000123.45", precision: 5, scale: 2, want: "12345"},
		{in: "0.05", precision: 2, scale: 2, want: "5"},
		{in: "0.99", precision: 2, scale: 2, want: "99"},
		{in: "99999999999999999999999999999999999999", precision: 38, scale: 0, want: "99999999999999999999999999999999999999"},
		{in: "-99999999999999999999999999999999999999", precision: 38, scale: 0, want: "-99999999999999999999999999999999999999"},
		{in: "0.12345678901234567890123456789012345678", precision: 38, scale: 38, want: "12345678901234567890123456789012345678"},
		{in: "-9999999999999999999999999999.9999999999", precision: 38, scale: 10, want: "-99999999999999999999999999999999999999"},
		// Never rounded.
		{in: "1.255", precision: 10, scale: 2, wantErr: "more than 2 digits after the point"},
		{in: "0.001", precision: 10, scale: 2, wantErr: "more than 2 digits after the point"},
		{in: "1.5", precision: 10, scale: 0, wantErr: "more than 0 digits after the point"},
		{in: "123456789.00", precision: 10, scale: 2, wantErr: "more than 10 significant digits"},
		{in: "100", precision: 2, scale: 0, wantErr: "more than 2 significant digits"},
		{in: "1.00", precision: 2, scale: 2, wantErr: "more than 2 significant digits"},
		{in: "100000000000000000000000000000000000000", precision: 38, scale: 0, wantErr: "more than 38 significant digits"},
		{in: "NaN", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "Infinity", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "-Infinity", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "-", precision: 10, scale: 2, wantErr: "not a number"},
		{in: ".", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "1e5", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "1,5", precision: 10, scale: 2, wantErr: "not a number"},
		{in: " 1", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "1.2.3", precision: 10, scale: 2, wantErr: ""},
		{in: "--1", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "0x10", precision: 10, scale: 2, wantErr: "not a number"},
		{in: "1_000", precision: 10, scale: 2, wantErr: "not a number"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d,%d", tt.in, tt.precision, tt.scale), func(t *testing.T) {
			got, err := mapping.ParseDecimal([]byte(tt.in), tt.precision, tt.scale)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseDecimal(%q, %d, %d) = %s, %v; want error %q", tt.in, tt.precision, tt.scale, got.BigInt(), err, tt.wantErr)
				}
				return
			}
			if err != nil || got.BigInt().String() != tt.want {
				t.Errorf("ParseDecimal(%q, %d, %d) = %s, %v; want %s", tt.in, tt.precision, tt.scale, got.BigInt(), err, tt.want)
			}
		})
	}
}

func TestParseBytea(t *testing.T) {
	tests := []struct {
		in      string
		want    []byte
		wantErr bool
	}{
		{in: `\x`, want: []byte{}},
		{in: `\x00ff10`, want: []byte{0, 0xff, 0x10}},
		{in: `\xDEADbeef`, want: []byte{0xde, 0xad, 0xbe, 0xef}},
		{in: `\x5c78`, want: []byte(`\x`)},
		{in: ``, wantErr: true},
		{in: `\`, wantErr: true},
		{in: `x00`, wantErr: true},
		{in: `\X00`, wantErr: true},
		{in: `\x0`, wantErr: true},
		{in: `\x0g`, wantErr: true},
		{in: `\x00 ff`, wantErr: true},
		{in: `\000\377`, wantErr: true}, // escape output form
		{in: `abc`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := mapping.ParseBytea([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseBytea(%q) = %x, want an error", tt.in, got)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) || got == nil {
				t.Errorf("ParseBytea(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
			}
		})
	}
}

// valueAt returns element i of a built array as a Go value.
func valueAt(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i).BigInt().String()
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *extensions.UUIDArray:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i)
	case *array.Time64:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, valueAt(a.ListValues(), int(j)))
		}
		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, [2]any{valueAt(a.Keys(), int(j)), valueAt(a.Items(), int(j))})
		}
		return out
	case *array.Struct:
		out := []any{}
		for f := 0; f < a.NumField(); f++ {
			out = append(out, valueAt(a.Field(f), i))
		}
		return out
	}
	return fmt.Sprintf("unexpected array %T", arr)
}

func sameValue(got, want any) bool {
	switch w := want.(type) {
	case float32:
		g, ok := got.(float32)
		if math.IsNaN(float64(w)) {
			return ok && math.IsNaN(float64(g))
		}
		return ok && g == w && math.Signbit(float64(g)) == math.Signbit(float64(w))
	case float64:
		g, ok := got.(float64)
		if math.IsNaN(w) {
			return ok && math.IsNaN(g)
		}
		return ok && g == w && math.Signbit(g) == math.Signbit(w)
	}
	if w, ok := want.([]any); ok {
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !sameValue(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

// errValue marks a case whose text must be refused.
type errValue struct{}

var (
	tsType   = &arrow.TimestampType{Unit: arrow.Microsecond}
	tstzType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
)

type appendCase struct {
	text []byte // nil: NULL
	want any    // nil: NULL; errValue{}: an error
}

func tc(text string, want any) appendCase { return appendCase{text: []byte(text), want: want} }

var refused = errValue{}

// appendTests are text forms as PostgreSQL prints them (see package doc) and
// malformed ones, for every builder type For's types turn into.
var appendTests = []struct {
	dt    arrow.DataType
	cases []appendCase
}{
	{arrow.FixedWidthTypes.Boolean, []appendCase{
		tc("t", true), tc("f", false), {nil, nil},
		tc("true", refused), tc("T", refused), tc("1", refused), tc("", refused),
	}},
	{arrow.PrimitiveTypes.Int32, []appendCase{
		tc("0", int32(0)), tc("-32768", int32(-32768)), tc("2147483647", int32(math.MaxInt32)), tc("-2147483648", int32(math.MinInt32)),
		{nil, nil},
		tc("2147483648", refused), tc("1.0", refused), tc(" 1", refused), tc("", refused), tc("1e3", refused),
	}},
	{arrow.PrimitiveTypes.Int64, []appendCase{
		tc("9223372036854775807", int64(math.MaxInt64)), tc("-9223372036854775808", int64(math.MinInt64)),
		tc("4294967295", int64(4294967295)), // largest oid
		tc("9223372036854775808", refused), tc("", refused), tc("0x10", refused),
	}},
	{arrow.PrimitiveTypes.Float32, []appendCase{
		tc("1.5", float32(1.5)), tc("0.1", float32(0.1)), tc("-0", float32(math.Copysign(0, -1))),
		tc("3.4028235e+38", float32(math.MaxFloat32)), tc("1e-45", float32(math.SmallestNonzeroFloat32)),
		tc("NaN", float32(math.NaN())), tc("Infinity", float32(math.Inf(1))), tc("-Infinity", float32(math.Inf(-1))),
		tc("3.5e+38", refused), tc("abc", refused), tc("", refused),
	}},
	{arrow.PrimitiveTypes.Float64, []appendCase{
		tc("0.1", 0.1), tc("1e+300", 1e300), tc("5e-324", math.SmallestNonzeroFloat64), tc("-0", math.Copysign(0, -1)),
		tc("NaN", math.NaN()), tc("Infinity", math.Inf(1)), tc("-Infinity", math.Inf(-1)),
		tc("1e999", refused), tc("", refused),
	}},
	{&arrow.Decimal128Type{Precision: 10, Scale: 2}, []appendCase{
		tc("12345678.90", "1234567890"), tc("-0.01", "-1"), tc("5", "500"), {nil, nil},
		tc("123456789.00", refused), tc("1.001", refused), tc("NaN", refused), tc("Infinity", refused),
	}},
	{&arrow.Decimal128Type{Precision: 38, Scale: 0}, []appendCase{
		tc("99999999999999999999999999999999999999", "99999999999999999999999999999999999999"),
		tc("100000000000000000000000000000000000000", refused),
	}},
	{arrow.BinaryTypes.String, []appendCase{
		tc("häagen", "häagen"), tc("", ""), tc("tab\there\nnewline", "tab\there\nnewline"),
		tc(`{"a": [1, 2.5, null]}`, `{"a": [1, 2.5, null]}`), tc("NaN", "NaN"), {nil, nil},
		tc("\xff", refused), tc("a\xc3", refused),
	}},
	{arrow.BinaryTypes.Binary, []appendCase{
		tc(`\x00ff10`, []byte{0, 0xff, 0x10}), tc(`\x`, []byte{}), {nil, nil},
		tc(`\x0`, refused), tc("abc", refused), tc("", refused),
	}},
	{extensions.NewUUIDType(), []appendCase{
		tc("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
		tc("00000000-0000-0000-0000-000000000000", uuid.UUID{}), {nil, nil},
		tc("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", refused), tc("not a uuid", refused), tc("", refused),
	}},
	{arrow.FixedWidthTypes.Date32, []appendCase{
		tc("1970-01-01", arrow.Date32(0)), tc("2000-02-29", arrow.Date32(11016)), tc("0001-12-31 BC", arrow.Date32(-719163)),
		tc("5874897-12-31", arrow.Date32(2145042905)), {nil, nil},
		tc("infinity", refused), tc("-infinity", refused), tc("2001-02-29", refused), tc("", refused),
	}},
	{arrow.FixedWidthTypes.Time64us, []appendCase{
		tc("00:00:00", arrow.Time64(0)), tc("23:59:59.999999", arrow.Time64(86_399_999_999)), tc("12:00:00.5", arrow.Time64(43_200_500_000)),
		{nil, nil},
		tc("24:00:00", refused), tc("12:00:00+00", refused), tc("", refused),
	}},
	{tsType, []appendCase{
		tc("2000-01-01 00:00:00", arrow.Timestamp(946_684_800_000_000)), tc("1969-12-31 23:59:59.999999", arrow.Timestamp(-1)),
		tc("0001-01-01 00:00:00 BC", arrow.Timestamp(-62_167_219_200_000_000)), {nil, nil},
		tc("2000-01-01 00:00:00+00", refused), tc("infinity", refused), tc("", refused),
	}},
	{tstzType, []appendCase{
		tc("2000-01-01 00:00:00+00", arrow.Timestamp(946_684_800_000_000)), tc("2024-06-01 17:30:00+05:30", arrow.Timestamp(1_717_243_200_000_000)),
		{nil, nil},
		tc("2000-01-01 00:00:00", refused), tc("-infinity", refused), tc("", refused),
	}},
}

func TestAppend(t *testing.T) {
	mem := memory.NewGoAllocator()
	for _, tt := range appendTests {
		t.Run(tt.dt.String(), func(t *testing.T) {
			b := array.NewBuilder(mem, tt.dt)
			defer b.Release()
			var wants []any
			for _, c := range tt.cases {
				n := b.Len()
				err := mapping.Append(b, c.text)
				if _, bad := c.want.(errValue); bad {
					var ve *mapping.ValueError
					if !errors.As(err, &ve) {
						t.Errorf("Append(%s, %q) error = %v, want a *ValueError", tt.dt, c.text, err)
					} else if ve.Target != tt.dt.String() || ve.Value != string(c.text) || ve.Reason == "" {
						t.Errorf("Append(%s, %q) error fields %+v", tt.dt, c.text, *ve)
					}
					if b.Len() != n {
						t.Errorf("Append(%s, %q) failed but left %d values, want %d", tt.dt, c.text, b.Len(), n)
					}
					continue
				}
				if err != nil {
					t.Errorf("Append(%s, %q) error: %v", tt.dt, c.text, err)
					continue
				}
				wants = append(wants, c.want)
			}
			arr := b.NewArray()
			defer arr.Release()
			if arr.Len() != len(wants) {
				t.Fatalf("built %d values, want %d", arr.Len(), len(wants))
			}
			i := 0
			for _, c := range tt.cases {
				if _, bad := c.want.(errValue); bad {
					continue
				}
				if got := valueAt(arr, i); !sameValue(got, c.want) {
					t.Errorf("Append(%s, %q) stored %#v, want %#v", tt.dt, c.text, got, c.want)
				}
				i++
			}
		})
	}
}

// TestAppendMappedTypes goes the way the bridge does: For, then the Arrow
// form iceberg-go gives that type, then a builder of it.
func TestAppendMappedTypes(t *testing.T) {
	tests := []struct {
		oid    uint32
		typmod int32
		text   string
		want   any
	}{
		{mapping.OIDBool, -1, "t", true},
		{mapping.OIDInt2, -1, "-32768", int32(-32768)},
		{mapping.OIDInt4, -1, "2147483647", int32(math.MaxInt32)},
		{mapping.OIDInt8, -1, "9223372036854775807", int64(math.MaxInt64)},
		{mapping.OIDOID, -1, "4294967295", int64(4294967295)},
		{mapping.OIDFloat4, -1, "1.5", float32(1.5)},
		{mapping.OIDFloat8, -1, "0.1", 0.1},
		{mapping.OIDNumeric, 655366, "12345678.90", "1234567890"},
		{mapping.OIDNumeric, -1, "NaN", "NaN"},
		{mapping.OIDNumeric, 329730, "1234600", "1234600"},
		{mapping.OIDNumeric, -1, "-0.000000000000000000000000000000000000000012345", "-0.000000000000000000000000000000000000000012345"},
		{mapping.OIDText, -1, "text", "text"},
		{mapping.OIDVarchar, 24, "häagen", "häagen"},
		{mapping.OIDBPChar, 7, "ab ", "ab "},
		{mapping.OIDName, -1, "pg_class", "pg_class"},
		{mapping.OIDJSON, -1, `{"a": 1}`, `{"a": 1}`},
		{mapping.OIDJSONB, -1, `{"a": 1}`, `{"a": 1}`},
		{mapping.OIDBytea, -1, `\x00ff`, []byte{0, 0xff}},
		{mapping.OIDUUID, -1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{mapping.OIDDate, -1, "0001-12-31 BC", arrow.Date32(-719163)},
		{mapping.OIDTime, -1, "12:00:00.5", arrow.Time64(43_200_500_000)},
		{mapping.OIDTimestamp, -1, "2000-01-01 00:00:00", arrow.Timestamp(946_684_800_000_000)},
		{mapping.OIDTimestampTZ, -1, "1999-12-31 18:29:59.999999+00", arrow.Timestamp(946_664_999_999_999)},
	}
	mem := memory.NewGoAllocator()
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d(%d)", tt.oid, tt.typmod), func(t *testing.T) {
			typ, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.oid, TypeMod: tt.typmod})
			if err != nil {
				t.Fatal(err)
			}
			dt, err := table.TypeToArrowType(typ, false, false)
			if err != nil {
				t.Fatalf("arrow type of %s: %v", typ, err)
			}
			b := array.NewBuilder(mem, dt)
			defer b.Release()
			if err := mapping.Append(b, []byte(tt.text)); err != nil {
				t.Fatalf("Append(%s from %s, %q) error: %v", dt, typ, tt.text, err)
			}
			if err := mapping.Append(b, nil); err != nil {
				t.Fatalf("Append(%s, NULL) error: %v", dt, err)
			}
			arr := b.NewArray()
			defer arr.Release()
			if got := valueAt(arr, 0); !sameValue(got, tt.want) {
				t.Errorf("Append(%s, %q) stored %#v, want %#v", dt, tt.text, got, tt.want)
			}
			if !arr.IsNull(1) {
				t.Errorf("Append(%s, nil) did not store NULL", dt)
			}
		})
	}
}

func TestAppendUnsupportedBuilder(t *testing.T) {
	b := array.NewBuilder(memory.NewGoAllocator(), arrow.BinaryTypes.LargeString)
	defer b.Release()
	err := mapping.Append(b, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "no value decoder") {
		t.Errorf("Append(large_string, %q) error = %v, want no value decoder", "x", err)
	}
	if b.Len() != 0 {
		t.Errorf("failed Append left %d values", b.Len())
	}
}

// TestValueErrorShortensValue: the error quotes at most 64 bytes of the
// value and does not touch the caller's buffer.
func TestValueErrorShortensValue(t *testing.T) {
	b := array.NewBuilder(memory.NewGoAllocator(), arrow.FixedWidthTypes.Boolean)
	defer b.Release()
	text := []byte(strings.Repeat("x", 61) + "yyyyyyyyyy")
	orig := bytes.Clone(text)
	err := mapping.Append(b, text)
	var ve *mapping.ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("Append error = %v, want *ValueError", err)
	}
	if want := strings.Repeat("x", 61) + "..."; ve.Value != want {
		t.Errorf("ValueError.Value = %q, want %q", ve.Value, want)
	}
	if !bytes.Equal(text, orig) {
		t.Errorf("Append changed its input to %q", text)
	}
	if msg := err.Error(); !strings.Contains(msg, `"`+strings.Repeat("x", 61)+`..."`) || !strings.Contains(msg, "bool") {
		t.Errorf("error message %q", msg)
	}
}

// decimalText matches what ParseDecimal must accept.
var decimalText = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)$`)

func FuzzParseDecimal(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string, precision, scale uint8) {
		p := 1 + int(precision)%mapping.MaxDecimalPrecision
		s := int(scale) % (p + 1)
		got, err := mapping.ParseDecimal([]byte(text), p, s)
		if !decimalText.MatchString(text) {
			if err == nil {
				t.Fatalf("ParseDecimal(%q, %d, %d) = %s, want an error", text, p, s, got.BigInt())
			}
			return
		}
		// Exact value times 10^scale: an integer below 10^precision fits.
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", text)
		}
		pow := func(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
		r.Mul(r, new(big.Rat).SetInt(pow(s)))
		if !r.IsInt() || new(big.Int).Abs(r.Num()).Cmp(pow(p)) >= 0 {
			if err == nil {
				t.Fatalf("ParseDecimal(%q, %d, %d) = %s, want an error (exact value ×10^%d is %s)", text, p, s, got.BigInt(), s, r.RatString())
			}
			return
		}
		if err != nil || got.BigInt().Cmp(r.Num()) != 0 {
			t.Fatalf("ParseDecimal(%q, %d, %d) = %s, %v; want %s", text, p, s, got.BigInt(), err, r.Num())
		}
	})
}

// fuzzTypes are the builder types FuzzAppend picks from.
var fuzzTypes = []arrow.DataType{
	arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	&arrow.Decimal128Type{Precision: 10, Scale: 2}, &arrow.Decimal128Type{Precision: 38, Scale: 0},
	&arrow.Decimal128Type{Precision: 38, Scale: 38}, &arrow.Decimal128Type{Precision: 1, Scale: 0},
	arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, extensions.NewUUIDType(),
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Time64us, tsType, tstzType,
	// Nested types, as For maps arrays, composites, intervals and hstore.
	mustArrow(builtinType(1007, -1)), mustArrow(arrayOf(builtinType(25, -1), 2)), mustArrow(geometryArray(1)),
	mustArrow(builtinType(1186, -1)), mustArrow(addressType()), mustArrow(extType("hstore", "hstore")),
	mustArrow(builtinType(1187, -1)), mustArrow(arrayOf(addressType(), 1)), mustArrow(geometryType()),
}

func mustArrow(typ *mapping.Type) arrow.DataType {
	it, err := mapping.For("public.t", mapping.Column{Name: "c", Type: typ})
	if err != nil {
		panic(err)
	}
	dt, err := table.TypeToArrowType(it, false, false)
	if err != nil {
		panic(err)
	}
	return dt
}

// FuzzAppend: any text into any builder is a value or a *ValueError, never
// a panic, and a refused value leaves the builder as it was.
func FuzzAppend(f *testing.F) {
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, kind uint8, text []byte) {
		dt := fuzzTypes[int(kind)%len(fuzzTypes)]
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		if err := mapping.Append(b, []byte("")); err == nil && b.Len() != 1 {
			t.Fatalf("Append(%s, \"\") succeeded with %d values", dt, b.Len())
		}
		n := b.Len()
		err := mapping.Append(b, text)
		if err != nil {
			var ve *mapping.ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("Append(%s, %q) error %v is not a *ValueError", dt, text, err)
			}
			if b.Len() != n {
				t.Fatalf("Append(%s, %q) failed but changed the builder from %d to %d values", dt, text, n, b.Len())
			}
			return
		}
		if b.Len() != n+1 {
			t.Fatalf("Append(%s, %q) succeeded with %d values, want %d", dt, text, b.Len(), n+1)
		}
		arr := b.NewArray()
		defer arr.Release()
		if err := array.ValidateFull(arr); err != nil {
			t.Fatalf("Append(%s, %q) built an invalid array: %v", dt, text, err)
		}
		if arr.IsNull(n) != (text == nil) {
			t.Fatalf("Append(%s, %q): null = %t", dt, text, arr.IsNull(n))
		}
		if s, ok := arr.(*array.String); ok && text != nil && s.Value(n) != string(text) {
			t.Fatalf("Append(string, %q) stored %q", text, s.Value(n))
		}
	})
}
