package iceberg

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// nestedRelation has a column of each nested kind, described as preflight
// describes them from the catalog.
func nestedRelation() *decode.Relation {
	int4 := mapping.Builtin(mapping.OIDInt4, -1)
	text := mapping.Builtin(mapping.OIDText, -1)
	mood := &mapping.Type{OID: 16390, Schema: "public", Name: "mood", Kind: mapping.KindEnum, Mod: -1}
	geo := &mapping.Type{OID: 16391, Schema: "public", Name: "geo", Kind: mapping.KindComposite, Mod: -1, Fields: []mapping.Field{
		{Name: "lat", Type: mapping.Builtin(mapping.OIDFloat8, -1)}, {Name: "lon", Type: mapping.Builtin(mapping.OIDFloat8, -1)},
	}}
	addr := &mapping.Type{OID: 16392, Schema: "public", Name: "address", Kind: mapping.KindComposite, Mod: -1, Fields: []mapping.Field{
		{Name: "street", Type: text}, {Name: "geo", Type: geo}, {Name: "tags", Type: mapping.Builtin(1009, -1)},
	}}
	grid := &mapping.Type{OID: 1007, Schema: "pg_catalog", Name: "_int4", Kind: mapping.KindArray, Mod: -1, Elem: int4, Delim: ',', Dims: 2}
	hstore := &mapping.Type{OID: 16400, Schema: "public", Name: "hstore", Extension: "hstore", Kind: mapping.KindBase, Mod: -1}
	col := func(name string, t *mapping.Type, typeName string) decode.Column {
		return decode.Column{Name: name, TypeOID: t.OID, TypeMod: t.Mod, TypeName: typeName, Type: t}
	}
	idCol := col("id", int4, "integer")
	idCol.Key = true
	return &decode.Relation{ID: 1, Schema: "public", Name: "t", ReplicaIdentity: 'd', Columns: []decode.Column{
		idCol,
		col("grid", grid, "integer[][]"),
		col("addr", addr, "address"),
		col("mood", mood, "mood"),
		col("attrs", hstore, "hstore"),
		col("span", mapping.Builtin(mapping.OIDInterval, -1), "interval"),
		col("spans", mapping.Builtin(1187, -1), "interval[]"),
	}}
}

// streamRelation is rel as a relation message from the stream announces
// it, with the names the sink keeps from the catalog.
func streamRelation(rel *decode.Relation) *decode.Relation {
	out := *rel
	out.Columns = make([]decode.Column, len(rel.Columns))
	for i, c := range rel.Columns {
		out.Columns[i] = decode.Column{Name: c.Name, TypeOID: c.TypeOID, TypeMod: c.TypeMod, Key: c.Key, TypeName: c.TypeName}
	}
	return &out
}

func fieldIDs(fields []icego.NestedField, ids map[int]string, t *testing.T) {
	var walk func(name string, typ icego.Type)
	add := func(id int, name string) {
		if id <= 0 {
			t.Errorf("%s has field ID %d", name, id)
		}
		if prev, dup := ids[id]; dup {
			t.Errorf("field ID %d used by %s and %s", id, prev, name)
		}
		ids[id] = name
	}
	walk = func(name string, typ icego.Type) {
		switch typ := typ.(type) {
		case *icego.StructType:
			for _, f := range typ.FieldList {
				add(f.ID, name+"."+f.Name)
				walk(name+"."+f.Name, f.Type)
			}
		case *icego.ListType:
			add(typ.ElementID, name+".element")
			walk(name+".element", typ.Element)
		case *icego.MapType:
			add(typ.KeyID, name+".key")
			add(typ.ValueID, name+".value")
			walk(name+".key", typ.KeyType)
			walk(name+".value", typ.ValueType)
		}
	}
	walk("", &icego.StructType{FieldList: fields})
}

// TestSchemasNested: every field, element, key and value has its own ID,
// and the IDs are those iceberg-go gives a new table.
func TestSchemasNested(t *testing.T) {
	rel := nestedRelation()
	for name, build := range map[string]func(*decode.Relation) (*icego.Schema, error){"mirror": MirrorSchema, "changelog": ChangelogSchema} {
		t.Run(name, func(t *testing.T) {
			sc, err := build(rel)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[int]string{}
			fieldIDs(sc.Fields(), ids, t)
			if sc.HighestFieldID() != len(ids) {
				t.Errorf("highest field ID %d, %d IDs: not dense", sc.HighestFieldID(), len(ids))
			}
			fresh, err := icego.AssignFreshSchemaIDs(sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !sc.Equals(fresh) {
				t.Errorf("schema IDs differ from iceberg-go's fresh IDs:\n%s\nfresh:\n%s", sc, fresh)
			}
			if name == "changelog" {
				if f, _ := sc.FindFieldByName(colCommitTS); f.ID != 4 {
					t.Errorf("commit_ts has ID %d, want 4", f.ID)
				}
			} else if !slicesEqual(sc.IdentifierFieldIDs, []int{1}) {
				t.Errorf("identifier fields %v, want [1]", sc.IdentifierFieldIDs)
			}
			if err := checkSameColumns("public.t", sc, rel, name == "changelog"); err != nil {
				t.Errorf("checkSameColumns(catalog relation) = %v", err)
			}
			if err := checkSameColumns("public.t", sc, streamRelation(rel), name == "changelog"); err != nil {
				t.Errorf("checkSameColumns(stream relation) = %v", err)
			}
		})
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckSameColumnsMismatch(t *testing.T) {
	rel := nestedRelation()
	sc, err := MirrorSchema(rel)
	if err != nil {
		t.Fatal(err)
	}
	retype := func(i int, oid uint32) *decode.Relation {
		r := streamRelation(rel)
		r.Columns[i].TypeOID = oid
		return r
	}
	tests := map[string]*decode.Relation{
		"int4 to int8":       retype(0, mapping.OIDInt8),
		"int4[][] to text[]": retype(1, 1009),
		"interval to text":   retype(5, mapping.OIDText),
		"interval[] to int4": retype(6, mapping.OIDInt4),
	}
	for name, r := range tests {
		var sme *SchemaMismatchError
		if err := checkSameColumns("public.t", sc, r, false); !errors.As(err, &sme) {
			t.Errorf("%s: checkSameColumns = %v, want a *SchemaMismatchError", name, err)
		}
	}
	// A composite with a field more, described by the catalog.
	r := nestedRelation()
	addr := *r.Columns[2].Type
	addr.Fields = append(addr.Fields, mapping.Field{Name: "zip", Type: mapping.Builtin(mapping.OIDText, -1)})
	r.Columns[2].Type = &addr
	var sme *SchemaMismatchError
	if err := checkSameColumns("public.t", sc, r, false); !errors.As(err, &sme) {
		t.Errorf("composite with a new attribute: checkSameColumns = %v, want a *SchemaMismatchError", err)
	}
}

// TestWriteNested writes nested values, NULLs included, through the
// bridge's file writer and reads the Parquet file back.
func TestWriteNested(t *testing.T) {
	rel := nestedRelation()
	rows := [][]string{
		{"1", "{{1,2},{3,NULL}}", `(Main,"(1.5,2)","{a,b}")`, "happy", `"a"=>"1", "b"=>NULL`, "1 year 2 mons 3 days 04:05:06.789", `{"1 day",NULL}`},
		{"2", "{}", "(,,)", "", "", "00:00:00", "{}"},
		{"3", nullText, nullText, nullText, nullText, nullText, nullText},
	}
	rec := readFile(t, writeFile(t, rel, len(rows), func(r int) []string { return rows[r] }))
	want := map[string][]string{
		"grid": {"[[1,2],[3,null]]", "[]", "(null)"},
		"addr": {`{"geo":{"lat":1.5,"lon":2},"street":"Main","tags":["a","b"]}`, `{"geo":null,"street":null,"tags":null}`, "(null)"},
		"span": {`{"days":3,"micros":14706789000,"months":14}`, `{"days":0,"micros":0,"months":0}`, "(null)"},
	}
	for c := 0; c < int(rec.NumCols()); c++ {
		name := rec.Schema().Field(c).Name
		arr := rec.Column(c)
		if err := array.ValidateFull(arr); err != nil {
			t.Errorf("column %s read back invalid: %v", name, err)
		}
		w, ok := want[name]
		if !ok {
			continue
		}
		for i := 0; i < arr.Len(); i++ {
			if got := arr.ValueStr(i); got != w[i] {
				t.Errorf("column %s row %d = %s, want %s", name, i, got, w[i])
			}
		}
	}
	attrs := rec.Column(4).(*array.Map)
	if attrs.IsNull(0) || attrs.IsNull(1) || !attrs.IsNull(2) {
		t.Errorf("attrs nulls = %t %t %t, want false false true", attrs.IsNull(0), attrs.IsNull(1), attrs.IsNull(2))
	}
	keys, items := attrs.Keys().(*array.String), attrs.Items().(*array.String)
	if keys.Len() != 2 || keys.Value(0) != "a" || items.Value(0) != "1" || keys.Value(1) != "b" || !items.IsNull(1) {
		t.Errorf("attrs entries: keys %v, items %v", keys, items)
	}
}
