package iceberg

import (
	"errors"
	"testing"

	icego "github.com/apache/iceberg-go"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/evolution"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// TestBindRetiredField binds a relation from before a retype under
// new-column (code text, then retyped to int: fields code__v2 string and
// code int) to the retyped schema: code goes to code__v2. A column of the
// relation that has the retired name itself keeps it, and without a
// retired field of a fitting type the bind reports the incompatible type.
func TestBindRetiredField(t *testing.T) {
	rel := func(cols ...decode.Column) *decode.Relation {
		return &decode.Relation{ID: 1, Schema: "pol", Name: "items", Columns: cols}
	}
	id := decode.Column{Name: "id", TypeOID: mapping.OIDInt4, TypeMod: -1, Key: true}
	codeText := decode.Column{Name: "code", TypeOID: mapping.OIDText, TypeMod: -1}
	bind := func(r *decode.Relation, fields ...icego.NestedField) ([]int, error) {
		t.Helper()
		asc, err := tableArrowSchema(icego.NewSchema(1, fields...))
		if err != nil {
			t.Fatal(err)
		}
		idx, _, err := bindFields("pol.items", r, asc.Fields(), fields)
		return idx, err
	}
	fid := icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int32, Required: true}
	old := icego.NestedField{ID: 2, Name: "code__v2", Type: icego.PrimitiveTypes.String}
	code := icego.NestedField{ID: 3, Name: "code", Type: icego.PrimitiveTypes.Int32}

	idx, err := bind(rel(id, codeText), fid, old, code)
	if err != nil || idx[1] != 1 {
		t.Fatalf("old relation on the retyped schema: %v, %v; want code bound to field 1 (code__v2)", idx, err)
	}
	// Retyped twice: text -> int (code__v2 string) -> bigint kept as
	// new-column too (code__v3 int): old text rows go to code__v2.
	v3 := icego.NestedField{ID: 4, Name: "code__v3", Type: icego.PrimitiveTypes.Int32}
	code8 := icego.NestedField{ID: 5, Name: "code", Type: icego.PrimitiveTypes.Date}
	if idx, err = bind(rel(id, codeText), fid, old, v3, code8); err != nil || idx[1] != 1 {
		t.Fatalf("text relation, retyped twice: %v, %v; want code bound to field 1", idx, err)
	}
	codeInt := decode.Column{Name: "code", TypeOID: mapping.OIDInt4, TypeMod: -1}
	if idx, err = bind(rel(id, codeInt), fid, old, v3, code8); err != nil || idx[1] != 2 {
		t.Fatalf("int relation, retyped twice: %v, %v; want code bound to field 2 (code__v3)", idx, err)
	}
	// The relation has a column named code__v2 of its own.
	own := decode.Column{Name: "code__v2", TypeOID: mapping.OIDText, TypeMod: -1}
	var inc *evolution.IncompatibleTypeError
	if _, err = bind(rel(id, codeText, own), fid, old, code); !errors.As(err, &inc) {
		t.Fatalf("code__v2 is a source column: %v, want an incompatible type error for code", err)
	}
	// No retired field of the type.
	if _, err = bind(rel(id, codeText), fid, code); !errors.As(err, &inc) || inc.Column != "code" {
		t.Fatalf("no retired field: %v, want an incompatible type error for code", err)
	}
}
