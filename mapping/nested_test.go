package mapping_test

import (
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

func mustUUID(s string) uuid.UUID { return uuid.MustParse(s) }

// arrowOf is the Arrow type iceberg-go writes an Iceberg type as.
func arrowOf(t *testing.T, typ iceberg.Type) arrow.DataType {
	t.Helper()
	dt, err := table.TypeToArrowType(typ, false, false)
	if err != nil {
		t.Fatalf("arrow type of %s: %v", typ, err)
	}
	return dt
}

func list(vs ...any) []any { return vs }

// TestAppendNested: values of the types For maps to lists, structs and
// maps, in PostgreSQL's text forms, through the Arrow types iceberg-go
// gives those Iceberg types.
func TestAppendNested(t *testing.T) {
	mustHex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			panic(err)
		}
		return b
	}
	ts := func(us int64) arrow.Timestamp { return arrow.Timestamp(us) }
	tests := []struct {
		name string
		typ  *mapping.Type
		text string
		want any // errValue{}: refused
	}{
		{"int4[]", builtinType(1007, -1), "{1,NULL,-3}", list(int32(1), nil, int32(-3))},
		{"int4[] empty", builtinType(1007, -1), "{}", list()},
		{"int4[] bad element", builtinType(1007, -1), "{1,x}", refused},
		{"int4[] 2-D into 1-D", builtinType(1007, -1), "{{1,2},{3,4}}", refused},
		{"int4[] lower bound 0", builtinType(1007, -1), "[0:1]={1,2}", refused},
		{"int4[][]", arrayOf(builtinType(23, -1), 2), "{{1,2},{3,NULL}}", list(list(int32(1), int32(2)), list(int32(3), nil))},
		{"int4[][] empty", arrayOf(builtinType(23, -1), 2), "{}", list()},
		{"int4[][] 1-D value", arrayOf(builtinType(23, -1), 2), "{1,2}", refused},
		{"text[] quoting", builtinType(1009, -1), `{"a b","say \"hi\"","back\\slash","","NULL",NULL,"{x}","a,b",ü}`,
			list("a b", `say "hi"`, `back\slash`, "", "NULL", nil, "{x}", "a,b", "ü")},
		{"numeric(10,2)[]", builtinType(1231, 655366), "{1.50,-0.01,NULL}", list("150", "-1", nil)},
		{"numeric(10,2)[] NaN", builtinType(1231, 655366), "{NaN}", refused},
		{"float8[]", builtinType(1022, -1), "{NaN,Infinity,-Infinity,-0,1e+300}", list(math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e300)},
		{"timestamptz[]", builtinType(1185, -1), `{"2000-01-01 00:00:00+00","0044-03-15 12:00:00+00 BC"}`, list(ts(946_684_800_000_000), ts(-63_517_780_800_000_000))}, // PG: extract(epoch ...)
		{"timestamptz[] infinity", builtinType(1185, -1), "{infinity}", refused},
		{"bytea[]", builtinType(1001, -1), `{"\\x00ff","\\x",NULL}`, list([]byte{0, 0xff}, []byte{}, nil)},
		{"interval[]", builtinType(1187, -1), `{"1 day",-02:00:00,NULL}`, list(list(int32(0), int32(1), int64(0)), list(int32(0), int32(0), int64(-7_200_000_000)), nil)},
		{"interval", builtinType(1186, -1), "1 year 2 mons 3 days 04:05:06.789", list(int32(14), int32(3), int64(14_706_789_000))},
		{"interval bad", builtinType(1186, -1), "1 fortnight", refused},
		{"geometry[]", geometryArray(1), "{" + ewkbPointSRID + ":NULL:" + ewkbLine + "}", list(mustHex(ewkbPointSRID), nil, mustHex(ewkbLine))},
		{"geometry[] one element", geometryArray(1), "{" + ewkbLine + "}", list(mustHex(ewkbLine))},
		{"geometry", geometryType(), ewkbPointZ, mustHex(ewkbPointZ)},
		{"geometry bad", geometryType(), "0101", refused},
		{"hstore", extType("hstore", "hstore"), `"a"=>"1", "b"=>NULL`, list([2]any{"a", "1"}, [2]any{"b", nil})},
		{"hstore empty", extType("hstore", "hstore"), "", list()},
		{"hstore bad", extType("hstore", "hstore"), `a=>1`, refused},
		{"composite", addressType(), `("1 Main St",12345,"(1.5,-2)","{a,""b c""}")`,
			list("1 Main St", "12345", list(1.5, -2.0), list("a", "b c"))},
		{"composite nulls", addressType(), `(,,,)`, list(nil, nil, nil, nil)},
		{"composite wrong arity", addressType(), `(a,b)`, refused},
		{"composite bad field", addressType(), `(a,b,"(x,1)",)`, refused},
		{"composite[]", arrayOf(compositeOf("pair", mapping.Field{Name: "k", Type: builtinType(25, -1)}, mapping.Field{Name: "v", Type: builtinType(23, -1)}), 1),
			`{"(a,1)","(\"b c\",)",NULL}`, list(list("a", int32(1)), list("b c", nil), nil)},
		{"tags[] (array of a domain over text[])", arrayOf(domainOf("tags", arrayOf(builtinType(25, -1), 1)), 1), `{"{a,b}","{}",NULL}`,
			list(list("a", "b"), list(), nil)},
		{"interval-shaped composite", compositeOf("iv", mapping.Field{Name: "months", Type: builtinType(23, -1)}, mapping.Field{Name: "days", Type: builtinType(23, -1)}, mapping.Field{Name: "micros", Type: builtinType(20, -1)}),
			"(1,2,3)", list(int32(1), int32(2), int64(3))},
		{"uuid[]", builtinType(2951, -1), "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", list(mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))},
		{"date[]", builtinType(1182, -1), "{2000-02-29,\"0001-12-31 BC\"}", list(arrow.Date32(11016), arrow.Date32(-719163))},
		{"bool[]", builtinType(1000, -1), "{t,f,NULL}", list(true, false, nil)},
	}
	mem := memory.NewGoAllocator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, err := mapping.For("public.t", mapping.Column{Name: "c", TypeOID: tt.typ.OID, TypeMod: tt.typ.Mod, Type: tt.typ})
			if err != nil {
				t.Fatal(err)
			}
			dt := arrowOf(t, typ)
			b := array.NewBuilder(mem, dt)
			defer b.Release()
			if err := mapping.Append(b, nil); err != nil {
				t.Fatal(err)
			}
			err = mapping.Append(b, []byte(tt.text))
			if _, bad := tt.want.(errValue); bad {
				var ve *mapping.ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("Append(%s, %q) error = %v, want a *ValueError", dt, tt.text, err)
				}
				t.Logf("refused: %v", err)
				if b.Len() != 1 {
					t.Fatalf("refused Append left %d values, want 1", b.Len())
				}
				// The builder is still usable and consistent.
				if err := mapping.Append(b, nil); err != nil {
					t.Fatal(err)
				}
				arr := b.NewArray()
				defer arr.Release()
				if err := array.ValidateFull(arr); err != nil {
					t.Fatalf("array after a refused value is invalid: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Append(%s, %q) error: %v", dt, tt.text, err)
			}
			arr := b.NewArray()
			defer arr.Release()
			if err := array.ValidateFull(arr); err != nil {
				t.Fatalf("invalid array: %v", err)
			}
			if !arr.IsNull(0) {
				t.Errorf("NULL not stored as NULL")
			}
			if got := valueAt(arr, 1); !sameValue(got, tt.want) {
				t.Errorf("Append(%s, %q) stored %#v, want %#v", dt, tt.text, got, tt.want)
			}
		})
	}
}
