package mapping

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// binaryTargets are the builder types of the binary-readable types, and
// some they are not read into.
var binaryTargets = []arrow.DataType{
	arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
	extensions.NewUUIDType(), arrow.FixedWidthTypes.Date32,
	&arrow.TimestampType{Unit: arrow.Microsecond}, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	&arrow.Decimal128Type{Precision: 10, Scale: 2}, arrow.FixedWidthTypes.Time64us,
}

func TestNumericText(t *testing.T) {
	num := func(ndigits, weight int16, sign uint16, dscale int16, digits ...uint16) []byte {
		b := []byte{byte(ndigits >> 8), byte(ndigits), byte(weight >> 8), byte(weight), byte(sign >> 8), byte(sign), byte(dscale >> 8), byte(dscale)}
		for _, d := range digits {
			b = append(b, byte(d>>8), byte(d))
		}
		return b
	}
	for _, tc := range []struct {
		data []byte
		want string // or the error
	}{
		{num(0, 0, 0, 0), "0"},
		{num(0, 0, 0, 3), "0.000"},
		{num(1, 0, 0, 1, 15), "15.0"},
		{num(2, 0, 0x4000, 4, 1, 5000), "-1.5000"},
		{num(1, -1, 0, 5, 12), "0.00120"},
		{num(1, -2, 0, 6, 12), "0.000000"}, // digits beyond dscale are cut, as numeric_out does
		{num(2, 1, 0, 0, 12, 3400), "123400"},
		{num(1, 2, 0, 0, 99), "9900000000"},
		{num(0, 0, 0xC000, 0), "NaN"},
		{num(0, 0, 0xD000, 0), "Infinity"},
		{num(0, 0, 0xF000, 0), "-Infinity"},
		{num(1, 0, 0, 0, 10000), "malformed numeric"},
		{num(1, 0, 0x1234, 0, 1), "malformed numeric"},
		{num(2, 0, 0, 0, 1), "malformed numeric"},
		{num(-1, 0, 0, 0), "malformed numeric"},
		{num(0, 0, 0, -1), "malformed numeric"},
		{[]byte{0, 0, 0}, "shorter than its header"},
	} {
		got, err := numericText(nil, tc.data)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("numericText(%x) error %v, want %q", tc.data, err, tc.want)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("numericText(%x) = %q, want %q", tc.data, got, tc.want)
		}
	}
}

// TestReadBinaryRefusesBadBytes: a binary form of the wrong size, or a
// type into a builder it is not read into, is an error, and the builder
// stays as it was.
func TestReadBinaryRefusesBadBytes(t *testing.T) {
	for _, tc := range []struct {
		oid  uint32
		dt   arrow.DataType
		data []byte
		want string
	}{
		{OIDInt4, arrow.PrimitiveTypes.Int32, []byte{0, 0, 1}, "binary form of 3 bytes"},
		{OIDInt8, arrow.PrimitiveTypes.Int32, []byte{0, 0, 0, 1, 0, 0, 0, 0}, "not a 32-bit integer"},
		{OIDBool, arrow.FixedWidthTypes.Boolean, []byte{2}, "not a boolean"},
		{OIDText, arrow.BinaryTypes.String, []byte{0xff}, "not valid UTF-8"},
		{OIDUUID, extensions.NewUUIDType(), make([]byte, 15), "binary form of 15 bytes"},
		{OIDDate, arrow.FixedWidthTypes.Date32, []byte{0x7f, 0xff, 0xff, 0xff}, "infinity has no Iceberg equivalent"},
		{OIDTimestamp, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, make([]byte, 8), "not interchangeable"},
		{OIDTimestampTZ, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, "infinity has no Iceberg equivalent"},
		{OIDTimestampTZ, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, make([]byte, 7), "binary form of 7 bytes"},
		{OIDInt8, arrow.PrimitiveTypes.Int64, make([]byte, 4), "binary form of 4 bytes"},
		{OIDFloat8, arrow.PrimitiveTypes.Float32, make([]byte, 8), "no binary reader"},
		{OIDJSONB, arrow.BinaryTypes.String, []byte{1, '{', '}'}, "no binary reader"},
	} {
		b := array.NewBuilder(memory.DefaultAllocator, tc.dt)
		err := AppendBinary(b, tc.oid, tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
			t.Errorf("AppendBinary(oid %d, %s, %x) = %v (%d values), want %q", tc.oid, tc.dt, tc.data, err, b.Len(), tc.want)
		}
		b.Release()
	}
}

func FuzzReadBinary(f *testing.F) {
	f.Add(uint32(OIDNumeric), uint8(11), []byte{0, 1, 0, 0, 0, 0, 0, 2, 0, 7})
	f.Add(uint32(OIDTimestampTZ), uint8(10), []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe})
	f.Add(uint32(OIDFloat4), uint8(4), []byte{0x7f, 0xc0, 0, 1})
	f.Add(uint32(OIDInt8), uint8(2), []byte{0x80, 0, 0, 0, 0, 0, 0, 1})
	f.Add(uint32(OIDInt4), uint8(1), []byte{0xff, 0xff, 0xff, 0xfe})
	f.Add(uint32(OIDVarchar), uint8(5), []byte("héllo"))
	f.Add(uint32(OIDTimestamp), uint8(9), []byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(uint32(OIDTimestampTZ), uint8(10), []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, oid uint32, target uint8, data []byte) {
		dt := binaryTargets[int(target)%len(binaryTargets)]
		b := array.NewBuilder(memory.DefaultAllocator, dt)
		defer b.Release()
		s, readErr := ReadBinary(oid, dt, data)
		if err := AppendBinary(b, oid, data); err != nil {
			if b.Len() != 0 {
				t.Fatalf("a refused value left %d values", b.Len())
			}
			if readErr == nil {
				t.Fatalf("AppendBinary refused what ReadBinary reads: %v", err)
			}
			return
		}
		if b.Len() != 1 {
			t.Fatalf("%d values appended", b.Len())
		}
		if readErr != nil {
			t.Fatalf("AppendBinary took what ReadBinary refuses: %v", readErr)
		}
		// AppendBinary's shortcuts append what ReadBinary reads.
		a := b.NewArray()
		defer a.Release()
		var same bool
		switch a := a.(type) {
		case *array.Int64:
			same = a.Value(0) == s.Int
		case *array.Int32:
			same = int64(a.Value(0)) == s.Int
		case *array.String:
			same = a.Value(0) == string(s.Bytes)
		case *array.Timestamp:
			same = int64(a.Value(0)) == s.Int
		default:
			same = true
		}
		if !same {
			t.Fatalf("AppendBinary appended %s, ReadBinary read %+v", a, s)
		}
	})
}
