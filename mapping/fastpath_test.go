package mapping_test

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// scalarCases are the common column types of a stream, one typical value
// each.
var scalarCases = []struct {
	name string
	dt   arrow.DataType
	text string
}{
	{"bool", arrow.FixedWidthTypes.Boolean, "t"},
	{"int4", arrow.PrimitiveTypes.Int32, "-123456"},
	{"int8", arrow.PrimitiveTypes.Int64, "9123456789012"},
	{"float8", arrow.PrimitiveTypes.Float64, "3.14159265358979"},
	{"text", arrow.BinaryTypes.String, "0cc175b9c0f1b6a831c399e269772661"},
	{"numeric(12,2)", &arrow.Decimal128Type{Precision: 12, Scale: 2}, "-1234567.89"},
	{"numeric(38,10)", &arrow.Decimal128Type{Precision: 38, Scale: 10}, "1234567890123456789012345678.0123456789"},
	{"timestamp", &arrow.TimestampType{Unit: arrow.Microsecond}, "2026-11-30 17:18:01.123456"},
	{"timestamptz", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "2026-11-30 17:18:01.123456+00"},
	{"date", arrow.FixedWidthTypes.Date32, "2026-11-30"},
	{"time", arrow.FixedWidthTypes.Time64us, "17:18:01.123456"},
	{"uuid", extensions.NewUUIDType(), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
}

// TestAppendScalarsAllocateNothing: the common scalar types go straight
// from the text into the builder.
func TestAppendScalarsAllocateNothing(t *testing.T) {
	for _, c := range scalarCases {
		b := array.NewBuilder(memory.NewGoAllocator(), c.dt)
		b.Reserve(1000)
		text := []byte(c.text)
		if n := testing.AllocsPerRun(200, func() {
			if err := mapping.Append(b, text); err != nil {
				t.Fatalf("Append(%s, %q): %v", c.name, text, err)
			}
		}); n != 0 {
			t.Errorf("Append(%s, %q): %v allocations, want 0", c.name, text, n)
		}
		b.Release()
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, c := range scalarCases {
		b.Run(c.name, func(b *testing.B) {
			bld := array.NewBuilder(memory.NewGoAllocator(), c.dt)
			defer bld.Release()
			text := []byte(c.text)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%(1<<16) == 0 {
					bld.NewArray().Release()
				}
				if err := mapping.Append(bld, text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// parseDecimalBig is ParseDecimal as it was before it read digits straight
// into 128 bits: through strings and math/big. FuzzParseDecimalMatchesBig holds the
// two to the same results.
func parseDecimalBig(text []byte, precision, scale int) (decimal128.Num, error) {
	s := string(text)
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return decimal128.Num{}, fmt.Errorf("not a number: %s has no decimal equivalent (map the column to string to keep it)", s)
	}
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
	}
	if intPart == "" && frac == "" {
		return decimal128.Num{}, fmt.Errorf("not a number")
	}
	for len(frac) > scale && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(frac) > scale {
		return decimal128.Num{}, fmt.Errorf("more than %d digits after the point", scale)
	}
	digits := intPart + frac + strings.Repeat("0", max(scale-len(frac), 0))
	for _, c := range digits {
		if c < '0' || c > '9' {
			return decimal128.Num{}, fmt.Errorf("not a number")
		}
	}
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

func FuzzParseDecimalMatchesBig(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.", ".5", "+1.25", "000123.45", "1.2500", "0.00", ".0", "1.2.3", "--1", "NaN",
		"99999999999999999999999999999999999999", "-9999999999999999999999999999.9999999999", "18446744073709551616", "-9223372036854775808"} {
		f.Add(s, uint8(38), uint8(10))
		f.Add(s, uint8(10), uint8(2))
		f.Add(s, uint8(1), uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, precision, scale uint8) {
		p, sc := int(precision%38)+1, int(scale%39)
		if sc > p {
			sc = p
		}
		got, err := mapping.ParseDecimal([]byte(s), p, sc)
		want, wantErr := parseDecimalBig([]byte(s), p, sc)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || got != want {
			t.Fatalf("ParseDecimal(%q, %d, %d) = %v, %v; want %v, %v", s, p, sc, got.BigInt(), err, want.BigInt(), wantErr)
		}
	})
}

// parseIntRef is how Append read integers before its own digit loop.
func parseIntRef(s string, bitSize int) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, bitSize)
	return v, err == nil
}

func FuzzAppendInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "+7", "007", "2147483647", "-2147483648", "2147483648", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "", "-", "+", "1_000", " 1", "1e3", "0x10"} {
		f.Add(s)
	}
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []struct {
			dt   arrow.DataType
			bits int
		}{{arrow.PrimitiveTypes.Int32, 32}, {arrow.PrimitiveTypes.Int64, 64}} {
			b := array.NewBuilder(mem, c.dt)
			err := mapping.Append(b, []byte(s))
			want, ok := parseIntRef(s, c.bits)
			if (err == nil) != ok {
				t.Fatalf("Append(%s, %q) error %v, strconv.ParseInt accepts it: %t", c.dt, s, err, ok)
			}
			if ok {
				arr := b.NewArray()
				var got int64
				switch a := arr.(type) {
				case *array.Int32:
					got = int64(a.Value(0))
				case *array.Int64:
					got = a.Value(0)
				}
				arr.Release()
				if got != want {
					t.Fatalf("Append(%s, %q) stored %d, want %d", c.dt, s, got, want)
				}
			}
			b.Release()
		}
	})
}

// FuzzUsualTimestamp: the fixed-position fast path reads what the scanner
// reads.
func FuzzUsualTimestamp(f *testing.F) {
	for _, s := range []string{"2026-11-30 17:18:01.123456+00", "2026-11-30 17:18:01", "2024-02-29 00:00:00.5-03:30",
		"2023-02-29 00:00:00", "2026-11-30 24:00:00", "2026-11-30 23:59:60", "0001-01-01 00:00:00 BC", "2026-11-30 17:18:01+05:30:15",
		"2026-11-30 17:18:01.1234567", "12026-11-30 17:18:01", "2026-11-30 17:18:01+5", "infinity"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, withZone bool) {
		got, err := mapping.ParseTimestamp([]byte(s), withZone)
		want, wantErr := mapping.ScanTimestamp([]byte(s), withZone)
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("ParseTimestamp(%q, %t) = %d, %v; the scanner reads %d, %v", s, withZone, got, err, want, wantErr)
		}
	})
}
