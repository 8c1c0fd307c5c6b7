package mapping_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// TestOIDs checks the constants against pg_type.dat.
func TestOIDs(t *testing.T) {
	tests := []struct {
		name string
		got  int
		want int
	}{
		{"bool", mapping.OIDBool, 16}, {"bytea", mapping.OIDBytea, 17}, {"name", mapping.OIDName, 19},
		{"int8", mapping.OIDInt8, 20}, {"int2", mapping.OIDInt2, 21}, {"int4", mapping.OIDInt4, 23},
		{"text", mapping.OIDText, 25}, {"oid", mapping.OIDOID, 26}, {"json", mapping.OIDJSON, 114},
		{"float4", mapping.OIDFloat4, 700}, {"float8", mapping.OIDFloat8, 701}, {"bpchar", mapping.OIDBPChar, 1042},
		{"varchar", mapping.OIDVarchar, 1043}, {"date", mapping.OIDDate, 1082}, {"time", mapping.OIDTime, 1083},
		{"timestamp", mapping.OIDTimestamp, 1114}, {"timestamptz", mapping.OIDTimestampTZ, 1184},
		{"numeric", mapping.OIDNumeric, 1700}, {"uuid", mapping.OIDUUID, 2950}, {"jsonb", mapping.OIDJSONB, 3802},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("OID of %s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// numericTypmod is how PostgreSQL encodes numeric(p,s) (make_numeric_typmod).
func numericTypmod(p, s int) int32 { return int32((p<<16)|(s&0x7ff)) + 4 }

func TestNumericTypmod(t *testing.T) {
	tests := []struct {
		name         string
		typmod       int32
		wantP, wantS int
		wantOK       bool
	}{
		// atttypmod values read from PostgreSQL 15.
		{"numeric(10,2)", 655366, 10, 2, true},
		{"numeric(1,0)", 65540, 1, 0, true},
		{"numeric(38,0)", 2490372, 38, 0, true},
		{"numeric(38,38)", 2490410, 38, 38, true},
		{"numeric(39,0)", 2555908, 39, 0, true},
		{"numeric(1000,0)", 65536004, 1000, 0, true},
		{"numeric(1000,1000)", 65537004, 1000, 1000, true},
		{"numeric(5,-2)", 329730, 5, -2, true},
		{"numeric(3,5)", 196617, 3, 5, true},
		{"numeric(1000,-1000)", 65537052, 1000, -1000, true},
		{"numeric(1,-1)", numericTypmod(1, -1), 1, -1, true},
		{"numeric(20,-1024)", numericTypmod(20, -1024), 20, -1024, true},
		{"numeric(20,1023)", numericTypmod(20, 1023), 20, 1023, true},
		{"numeric", -1, 0, 0, false},
		{"typmod 0", 0, 0, 0, false},
		{"typmod 3", 3, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s, ok := mapping.NumericTypmod(tt.typmod)
			if p != tt.wantP || s != tt.wantS || ok != tt.wantOK {
				t.Errorf("NumericTypmod(%d) = %d, %d, %t; want %d, %d, %t", tt.typmod, p, s, ok, tt.wantP, tt.wantS, tt.wantOK)
			}
		})
	}
	// The helper agrees with PostgreSQL on the captured values.
	if got := numericTypmod(5, -2); got != 329730 {
		t.Errorf("numericTypmod(5, -2) = %d, want 329730", got)
	}
	for p := 1; p <= 1000; p += 37 {
		for s := -1000; s <= 1000; s += 91 {
			gp, gs, ok := mapping.NumericTypmod(numericTypmod(p, s))
			if gp != p || gs != s || !ok {
				t.Errorf("NumericTypmod(typmod of numeric(%d,%d)) = %d, %d, %t", p, s, gp, gs, ok)
			}
		}
	}
}

func TestFor(t *testing.T) {
	tests := []struct {
		name   string
		oid    uint32
		typmod int32
		want   iceberg.Type
	}{
		{"bool", 16, -1, iceberg.PrimitiveTypes.Bool},
		{"bytea", 17, -1, iceberg.PrimitiveTypes.Binary},
		{"name", 19, -1, iceberg.PrimitiveTypes.String},
		{"int8", 20, -1, iceberg.PrimitiveTypes.Int64},
		{"int2", 21, -1, iceberg.PrimitiveTypes.Int32},
		{"int4", 23, -1, iceberg.PrimitiveTypes.Int32},
		{"text", 25, -1, iceberg.PrimitiveTypes.String},
		{"oid", 26, -1, iceberg.PrimitiveTypes.Int64},
		{"json", 114, -1, iceberg.PrimitiveTypes.String},
		{"float4", 700, -1, iceberg.PrimitiveTypes.Float32},
		{"float8", 701, -1, iceberg.PrimitiveTypes.Float64},
		{"char(3)", 1042, 7, iceberg.PrimitiveTypes.String},
		{"varchar(20)", 1043, 24, iceberg.PrimitiveTypes.String},
		{"varchar", 1043, -1, iceberg.PrimitiveTypes.String},
		{"date", 1082, -1, iceberg.PrimitiveTypes.Date},
		{"time", 1083, -1, iceberg.PrimitiveTypes.Time},
		{"time(3)", 1083, 3, iceberg.PrimitiveTypes.Time},
		{"timestamp", 1114, -1, iceberg.PrimitiveTypes.Timestamp},
		{"timestamptz", 1184, -1, iceberg.PrimitiveTypes.TimestampTz},
		{"timestamptz(0)", 1184, 0, iceberg.PrimitiveTypes.TimestampTz},
		{"uuid", 2950, -1, iceberg.PrimitiveTypes.UUID},
		{"jsonb", 3802, -1, iceberg.PrimitiveTypes.String},
		{"numeric", 1700, -1, iceberg.PrimitiveTypes.String},
		{"numeric(10,2)", 1700, 655366, iceberg.DecimalTypeOf(10, 2)},
		{"numeric(1,0)", 1700, 65540, iceberg.DecimalTypeOf(1, 0)},
		{"numeric(38,0)", 1700, 2490372, iceberg.DecimalTypeOf(38, 0)},
		{"numeric(38,38)", 1700, 2490410, iceberg.DecimalTypeOf(38, 38)},
		// Beyond Iceberg's decimal: the exact text form.
		{"numeric(39,0)", 1700, 2555908, iceberg.PrimitiveTypes.String},
		{"numeric(1000,0)", 1700, 65536004, iceberg.PrimitiveTypes.String},
		{"numeric(5,-2)", 1700, 329730, iceberg.PrimitiveTypes.String},
		{"numeric(1000,-1000)", 1700, 65537052, iceberg.PrimitiveTypes.String},
		{"numeric(3,5)", 1700, 196617, iceberg.PrimitiveTypes.String},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.oid, TypeMod: tt.typmod, TypeName: tt.name})
			if err != nil {
				t.Fatalf("For(%s) error: %v", tt.name, err)
			}
			if !got.Equals(tt.want) {
				t.Errorf("For(%s) = %s, want %s", tt.name, got, tt.want)
			}
		})
	}
}

func TestForUnsupported(t *testing.T) {
	tests := []struct {
		oid      uint32
		typeName string
		wantName string
	}{
		{1186, "interval", "type interval "},
		{1266, "time with time zone", "type time with time zone "},
		{1007, "integer[]", "type integer[] "},
		{16385, "mood", "type mood "},
		{0, "", "type oid 0 "},
		{790, "", "type oid 790 "}, // money
	}
	for _, tt := range tests {
		t.Run(tt.wantName, func(t *testing.T) {
			got, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.oid, TypeMod: -1, TypeName: tt.typeName})
			var ute *mapping.UnsupportedTypeError
			if !errors.As(err, &ute) {
				t.Fatalf("For(oid %d) = %v, %v; want *UnsupportedTypeError", tt.oid, got, err)
			}
			if got != nil {
				t.Errorf("For(oid %d) returned type %s with its error", tt.oid, got)
			}
			if ute.Table != "public.t" || ute.Column != "c" || ute.OID != tt.oid || ute.TypeName != tt.typeName {
				t.Errorf("error fields = %+v", *ute)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "public.t.c: ") || !strings.Contains(msg, tt.wantName) {
				t.Errorf("error %q, want it to name public.t.c and %q", msg, tt.wantName)
			}
		})
	}
}
