package mapping_test

import (
	"errors"
	"fmt"
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

// Type descriptions as preflight builds them from the catalog.
func builtinType(oid uint32, mod int32) *mapping.Type {
	t := mapping.Builtin(oid, mod)
	if t == nil {
		panic(fmt.Sprintf("no built-in type %d", oid))
	}
	return t
}

func arrayOf(elem *mapping.Type, dims int) *mapping.Type {
	return &mapping.Type{OID: 90000, Schema: elem.Schema, Name: "_" + elem.Name, Kind: mapping.KindArray, Mod: elem.Mod, Elem: elem, Delim: ',', Dims: dims}
}

func userType(name string, kind mapping.Kind) *mapping.Type {
	return &mapping.Type{OID: 16400, Schema: "public", Name: name, Kind: kind, Mod: -1}
}

func extType(ext, name string) *mapping.Type {
	return &mapping.Type{OID: 16500, Schema: "public", Name: name, Extension: ext, Kind: mapping.KindBase, Mod: -1}
}

func domainOf(name string, base *mapping.Type) *mapping.Type {
	d := userType(name, mapping.KindDomain)
	d.Base = base
	return d
}

func compositeOf(name string, fields ...mapping.Field) *mapping.Type {
	c := userType(name, mapping.KindComposite)
	c.Fields = fields
	return c
}

var (
	intT   = iceberg.PrimitiveTypes.Int32
	longT  = iceberg.PrimitiveTypes.Int64
	strT   = iceberg.PrimitiveTypes.String
	binT   = iceberg.PrimitiveTypes.Binary
	listOf = func(e iceberg.Type) iceberg.Type { return &iceberg.ListType{Element: e} }
)

// geometry as the catalog describes PostGIS's type (typdelim ':').
func geometryType() *mapping.Type { return extType("postgis", "geometry") }

func geometryArray(dims int) *mapping.Type {
	a := arrayOf(geometryType(), dims)
	a.Delim = ':'
	return a
}

func addressType() *mapping.Type {
	geo := compositeOf("geo", mapping.Field{Name: "lat", Type: builtinType(mapping.OIDFloat8, -1)}, mapping.Field{Name: "lon", Type: builtinType(mapping.OIDFloat8, -1)})
	return compositeOf("address",
		mapping.Field{Name: "street", Type: builtinType(mapping.OIDText, -1)},
		mapping.Field{Name: "zip", Type: builtinType(mapping.OIDVarchar, 14)},
		mapping.Field{Name: "geo", Type: geo},
		mapping.Field{Name: "tags", Type: arrayOf(builtinType(mapping.OIDText, -1), 1)},
	)
}

var forTests = []struct {
	name string
	typ  *mapping.Type
	want iceberg.Type
}{
	{"bool", builtinType(16, -1), iceberg.PrimitiveTypes.Bool},
	{"bytea", builtinType(17, -1), binT},
	{"\"char\"", builtinType(18, -1), strT},
	{"name", builtinType(19, -1), strT},
	{"int8", builtinType(20, -1), longT},
	{"int2", builtinType(21, -1), intT},
	{"int4", builtinType(23, -1), intT},
	{"text", builtinType(25, -1), strT},
	{"oid", builtinType(26, -1), longT},
	{"json", builtinType(114, -1), strT},
	{"xml", builtinType(142, -1), strT},
	{"cidr", builtinType(650, -1), strT},
	{"float4", builtinType(700, -1), iceberg.PrimitiveTypes.Float32},
	{"float8", builtinType(701, -1), iceberg.PrimitiveTypes.Float64},
	{"macaddr8", builtinType(774, -1), strT},
	{"money", builtinType(790, -1), strT},
	{"macaddr", builtinType(829, -1), strT},
	{"inet", builtinType(869, -1), strT},
	{"char(3)", builtinType(1042, 7), strT},
	{"varchar(20)", builtinType(1043, 24), strT},
	{"varchar", builtinType(1043, -1), strT},
	{"date", builtinType(1082, -1), iceberg.PrimitiveTypes.Date},
	{"time", builtinType(1083, -1), iceberg.PrimitiveTypes.Time},
	{"time(3)", builtinType(1083, 3), iceberg.PrimitiveTypes.Time},
	{"timestamp", builtinType(1114, -1), iceberg.PrimitiveTypes.Timestamp},
	{"timestamptz", builtinType(1184, -1), iceberg.PrimitiveTypes.TimestampTz},
	{"timestamptz(0)", builtinType(1184, 0), iceberg.PrimitiveTypes.TimestampTz},
	{"interval", builtinType(1186, -1), mapping.IntervalType()},
	{"interval day", builtinType(1186, 0x7fff0000|(1<<3)), mapping.IntervalType()},
	{"timetz", builtinType(1266, -1), strT},
	{"bit(8)", builtinType(1560, 8), strT},
	{"varbit", builtinType(1562, -1), strT},
	{"uuid", builtinType(2950, -1), iceberg.PrimitiveTypes.UUID},
	{"pg_lsn", builtinType(3220, -1), strT},
	{"tsvector", builtinType(3614, -1), strT},
	{"tsquery", builtinType(3615, -1), strT},
	{"jsonb", builtinType(3802, -1), strT},
	{"jsonpath", builtinType(4072, -1), strT},
	{"numeric", builtinType(1700, -1), strT},
	{"numeric(10,2)", builtinType(1700, 655366), iceberg.DecimalTypeOf(10, 2)},
	{"numeric(1,0)", builtinType(1700, 65540), iceberg.DecimalTypeOf(1, 0)},
	{"numeric(38,0)", builtinType(1700, 2490372), iceberg.DecimalTypeOf(38, 0)},
	{"numeric(38,38)", builtinType(1700, 2490410), iceberg.DecimalTypeOf(38, 38)},
	{"numeric(39,0)", builtinType(1700, 2555908), strT},
	{"numeric(1000,0)", builtinType(1700, 65536004), strT},
	// Negative scale: integers of up to p−s digits.
	{"numeric(5,-2)", builtinType(1700, 329730), iceberg.DecimalTypeOf(7, 0)},
	{"numeric(36,-2)", builtinType(1700, numericTypmod(36, -2)), iceberg.DecimalTypeOf(38, 0)},
	{"numeric(37,-2)", builtinType(1700, numericTypmod(37, -2)), strT},
	{"numeric(1000,-1000)", builtinType(1700, 65537052), strT},
	// Scale above precision: below 10^(p−s), s digits after the point.
	{"numeric(3,5)", builtinType(1700, 196617), iceberg.DecimalTypeOf(5, 5)},
	{"numeric(1,38)", builtinType(1700, numericTypmod(1, 38)), iceberg.DecimalTypeOf(38, 38)},
	{"numeric(1,39)", builtinType(1700, numericTypmod(1, 39)), strT},
	{"int4range", builtinType(3904, -1), strT},
	{"tstzrange", builtinType(3910, -1), strT},
	{"int4multirange", builtinType(4451, -1), strT},
	{"datemultirange", builtinType(4535, -1), strT},
	{"citext", extType("citext", "citext"), strT},
	{"hstore", extType("hstore", "hstore"), mapping.HstoreType()},
	{"geometry", geometryType(), binT},
	{"geography", extType("postgis", "geography"), binT},
	{"enum", userType("mood", mapping.KindEnum), strT},
	{"user range", userType("floatrange", mapping.KindRange), strT},
	{"user multirange", userType("floatmultirange", mapping.KindMultirange), strT},
	{"domain over int4", domainOf("posint", builtinType(23, -1)), intT},
	{"domain over numeric(10,2)", domainOf("price", builtinType(1700, 655366)), iceberg.DecimalTypeOf(10, 2)},
	{"domain over domain", domainOf("small_price", domainOf("price", builtinType(1700, 655366))), iceberg.DecimalTypeOf(10, 2)},
	{"domain over text[]", domainOf("tags", arrayOf(builtinType(25, -1), 1)), listOf(strT)},
	{"int4[]", builtinType(1007, -1), listOf(intT)},
	{"int4[][]", arrayOf(builtinType(23, -1), 2), listOf(listOf(intT))},
	{"int4[][][]", arrayOf(builtinType(23, -1), 3), listOf(listOf(listOf(intT)))},
	{"dims 0 counts as 1", arrayOf(builtinType(23, -1), 0), listOf(intT)},
	{"numeric(10,2)[]", builtinType(1231, 655366), listOf(iceberg.DecimalTypeOf(10, 2))},
	{"interval[]", builtinType(1187, -1), listOf(mapping.IntervalType())},
	{"int4range[]", builtinType(3905, -1), listOf(strT)},
	{"mood[]", arrayOf(userType("mood", mapping.KindEnum), 1), listOf(strT)},
	{"posint[]", arrayOf(domainOf("posint", builtinType(23, -1)), 1), listOf(intT)},
	{"tags[] (array of a domain over an array)", arrayOf(domainOf("tags", arrayOf(builtinType(25, -1), 1)), 1), listOf(listOf(strT))},
	{"geometry[]", geometryArray(1), listOf(binT)},
	{"hstore[]", arrayOf(extType("hstore", "hstore"), 1), listOf(mapping.HstoreType())},
	{"composite", addressType(), &iceberg.StructType{FieldList: []iceberg.NestedField{
		{Name: "street", Type: strT},
		{Name: "zip", Type: strT},
		{Name: "geo", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{Name: "lat", Type: iceberg.PrimitiveTypes.Float64}, {Name: "lon", Type: iceberg.PrimitiveTypes.Float64},
		}}},
		{Name: "tags", Type: listOf(strT)},
	}}},
	{"composite[]", arrayOf(compositeOf("pair", mapping.Field{Name: "k", Type: builtinType(25, -1)}, mapping.Field{Name: "v", Type: builtinType(23, -1)}), 1),
		listOf(&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "k", Type: strT}, {Name: "v", Type: intT}}})},
	{"domain over composite", domainOf("addr", compositeOf("pair", mapping.Field{Name: "k", Type: builtinType(25, -1)})),
		&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "k", Type: strT}}}},
}

func TestFor(t *testing.T) {
	for _, tt := range forTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.typ.OID, TypeMod: tt.typ.Mod, TypeName: tt.name, Type: tt.typ})
			if err != nil {
				t.Fatalf("For(%s) error: %v", tt.name, err)
			}
			if !got.Equals(tt.want) {
				t.Errorf("For(%s) = %s, want %s", tt.name, got, tt.want)
			}
		})
	}
}

// TestForBuiltinByOID: without a catalog description, built-in types are
// known by OID alone, arrays as one-dimensional.
func TestForBuiltinByOID(t *testing.T) {
	tests := []struct {
		oid    uint32
		typmod int32
		want   iceberg.Type
	}{
		{mapping.OIDInt4, -1, intT},
		{mapping.OIDNumeric, 655366, iceberg.DecimalTypeOf(10, 2)},
		{1231, 655366, listOf(iceberg.DecimalTypeOf(10, 2))},
		{1007, -1, listOf(intT)},
		{mapping.OIDInterval, -1, mapping.IntervalType()},
		{3910, -1, strT},
	}
	for _, tt := range tests {
		got, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.oid, TypeMod: tt.typmod})
		if err != nil || !got.Equals(tt.want) {
			t.Errorf("For(oid %d, typmod %d) = %v, %v; want %s", tt.oid, tt.typmod, got, err, tt.want)
		}
	}
}

// TestEveryRuleExercised: each rule of the table (and so each line of the
// doc's table) is what For used for at least one case of forTests.
func TestEveryRuleExercised(t *testing.T) {
	used := map[int]bool{}
	for _, tt := range forTests {
		var walk func(typ *mapping.Type)
		walk = func(typ *mapping.Type) {
			if typ == nil {
				return
			}
			if i, ok := mapping.RuleFor(typ); ok {
				used[i] = true
			}
			walk(typ.Elem)
			walk(typ.Base)
			for _, f := range typ.Fields {
				walk(f.Type)
			}
		}
		walk(tt.typ)
	}
	for i, r := range mapping.Rules() {
		if !used[i] {
			t.Errorf("rule %d (%s → %s) has no case in forTests", i, r.Postgres, r.Iceberg)
		}
	}
}

func TestForUnsupported(t *testing.T) {
	pointT := &mapping.Type{OID: 600, Schema: "pg_catalog", Name: "point", Kind: mapping.KindBase, Mod: -1}
	boxArray := &mapping.Type{OID: 1020, Schema: "pg_catalog", Name: "_box", Kind: mapping.KindArray, Mod: -1, Dims: 1, Delim: ';',
		Elem: &mapping.Type{OID: 603, Schema: "pg_catalog", Name: "box", Kind: mapping.KindBase, Mod: -1}}
	semicolonText := arrayOf(builtinType(25, -1), 1)
	semicolonText.Delim = ';'
	tests := []struct {
		name     string
		oid      uint32
		typ      *mapping.Type
		typeName string
		want     []string // in the message
	}{
		{name: "point", oid: 600, typ: pointT, typeName: "point", want: []string{"type point has no Iceberg mapping;"}},
		{name: "unknown oid", oid: 16385, typeName: "mood", want: []string{"type mood has no Iceberg mapping;"}},
		{name: "no name", oid: 0, want: []string{"type oid 0 has no Iceberg mapping"}},
		{name: "tid by oid", oid: 27, want: []string{"type oid 27 "}},
		{name: "pseudo", oid: 16390, typ: userType("anything", mapping.KindPseudo), typeName: "anything", want: []string{"type anything "}},
		{name: "extension type not known", oid: 16600, typ: extType("ltree", "ltree"), typeName: "ltree", want: []string{"type ltree "}},
		{name: "hstore from another extension", oid: 16601, typ: extType("other", "hstore"), typeName: "hstore", want: []string{"type hstore "}},
		{name: "user type named like a built-in", oid: 16602, typ: &mapping.Type{OID: 16602, Schema: "public", Name: "int4", Kind: mapping.KindBase, Mod: -1}, typeName: "int4", want: []string{"type int4 "}},
		{name: "box[]", oid: 1020, typ: boxArray, typeName: "box[]", want: []string{"type box[] has no Iceberg mapping (element has type box)"}},
		{name: "text[] with ';'", oid: 1009, typ: semicolonText, typeName: "text[]", want: []string{`its elements are separated by ';'`}},
		{name: "composite with a point", oid: 16603, typeName: "shape",
			typ:  compositeOf("shape", mapping.Field{Name: "name", Type: builtinType(25, -1)}, mapping.Field{Name: "at", Type: pointT}),
			want: []string{"type shape has no Iceberg mapping (field at has type point)"}},
		{name: "nested", oid: 16604, typeName: "outer",
			typ:  compositeOf("outer", mapping.Field{Name: "inner", Type: arrayOf(domainOf("d", pointT), 1)}),
			want: []string{"(field inner.element.base has type point)"}},
		{name: "empty composite", oid: 16605, typ: compositeOf("nothing"), typeName: "nothing", want: []string{"without attributes"}},
		{name: "domain without base", oid: 16606, typ: userType("d", mapping.KindDomain), typeName: "d", want: []string{"no base type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.oid, TypeMod: -1, TypeName: tt.typeName, Type: tt.typ})
			var ute *mapping.UnsupportedTypeError
			if !errors.As(err, &ute) {
				t.Fatalf("For(%s) = %v, %v; want *UnsupportedTypeError", tt.name, got, err)
			}
			if got != nil {
				t.Errorf("For(%s) returned type %s with its error", tt.name, got)
			}
			if ute.Table != "public.t" || ute.Column != "c" || ute.OID != tt.oid || ute.TypeName != tt.typeName {
				t.Errorf("error fields = %+v", *ute)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "public.t.c: ") || !strings.Contains(msg, "{column: public.t.c, to: exclude}") || !strings.Contains(msg, "docs/type-mapping.md") {
				t.Errorf("error %q, want it to name public.t.c and say what to do", msg)
			}
			if strings.ContainsAny(msg, "<>") {
				t.Errorf("error %q has a placeholder", msg)
			}
			ute.Fix = "ALTER PUBLICATION p ADD TABLE public.t (id)"
			if msg := ute.Error(); !strings.Contains(msg, "column list:\n  ALTER PUBLICATION p ADD TABLE public.t (id)\nor exclude it") {
				t.Errorf("error with a fix %q, want the fix in it", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q, want it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestTypeDisplay(t *testing.T) {
	tests := []struct {
		typ  *mapping.Type
		want string
	}{
		{builtinType(23, -1), "integer"},
		{builtinType(1007, -1), "integer[]"},
		{arrayOf(builtinType(1184, -1), 2), "timestamp with time zone[][]"},
		{userType("mood", mapping.KindEnum), "mood"},
		{&mapping.Type{Schema: "shop", Name: "mood", Kind: mapping.KindEnum}, "shop.mood"},
		{nil, "(unknown type)"},
	}
	for _, tt := range tests {
		if got := tt.typ.Display(); got != tt.want {
			t.Errorf("Display() = %q, want %q", got, tt.want)
		}
	}
}

func TestSameType(t *testing.T) {
	a := &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 3, Name: "x", Type: &iceberg.ListType{ElementID: 4, Element: intT}}}}
	b := &iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "x", Type: listOf(intT)}}}
	if !mapping.SameType(a, b) || a.Equals(b) {
		t.Errorf("SameType should ignore IDs, Equals does not")
	}
	tests := []iceberg.Type{
		&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "y", Type: listOf(intT)}}},
		&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "x", Type: listOf(longT)}}},
		&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "x", Type: listOf(intT), Required: true}}},
		&iceberg.StructType{FieldList: []iceberg.NestedField{{Name: "x", Type: &iceberg.ListType{Element: intT, ElementRequired: true}}}},
		listOf(intT), mapping.HstoreType(), strT,
	}
	for _, other := range tests {
		if mapping.SameType(a, other) {
			t.Errorf("SameType(%s, %s) = true", a, other)
		}
	}
	if !mapping.SameType(mapping.HstoreType(), &iceberg.MapType{KeyID: 1, ValueID: 2, KeyType: strT, ValueType: strT}) {
		t.Errorf("SameType(map, map with IDs) = false")
	}
}
