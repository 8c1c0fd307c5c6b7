package evolution

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

var (
	i32  = icego.PrimitiveTypes.Int32
	i64  = icego.PrimitiveTypes.Int64
	f32  = icego.PrimitiveTypes.Float32
	f64  = icego.PrimitiveTypes.Float64
	str  = icego.PrimitiveTypes.String
	date = icego.PrimitiveTypes.Date
)

func cols(cs ...Column) []Column { return cs }

func TestDiff(t *testing.T) {
	id := Column{Name: "id", Type: i32, Key: true}
	tests := []struct {
		name      string
		cur, next []Column
		want      []Update
		wantErr   any
	}{
		{"same", cols(id, Column{Name: "a", Type: str}), cols(id, Column{Name: "a", Type: str}), nil, nil},
		{"reordered", cols(id, Column{Name: "a", Type: str}, Column{Name: "b", Type: i32}), cols(id, Column{Name: "b", Type: i32}, Column{Name: "a", Type: str}), nil, nil},
		{"add", cols(id), cols(id, Column{Name: "a", Type: str}, Column{Name: "b", Type: date}),
			[]Update{{Kind: Add, Name: "a", Type: str}, {Kind: Add, Name: "b", Type: date}}, nil},
		{"drop", cols(id, Column{Name: "a", Type: str}), cols(id), []Update{{Kind: Drop, Name: "a", From: str}}, nil},
		{"int to long", cols(id, Column{Name: "n", Type: i32}), cols(id, Column{Name: "n", Type: i64}),
			[]Update{{Kind: Promote, Name: "n", From: i32, Type: i64}}, nil},
		{"float to double", cols(id, Column{Name: "f", Type: f32}), cols(id, Column{Name: "f", Type: f64}),
			[]Update{{Kind: Promote, Name: "f", From: f32, Type: f64}}, nil},
		{"decimal widening", cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(10, 2)}), cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(12, 2)}),
			[]Update{{Kind: Promote, Name: "d", From: icego.DecimalTypeOf(10, 2), Type: icego.DecimalTypeOf(12, 2)}}, nil},
		{"drop, promote and add in order", cols(id, Column{Name: "a", Type: str}, Column{Name: "n", Type: i32}), cols(id, Column{Name: "n", Type: i64}),
			[]Update{{Kind: Drop, Name: "a", From: str}, {Kind: Promote, Name: "n", From: i32, Type: i64}}, nil},
		{"long to int", cols(id, Column{Name: "n", Type: i64}), cols(id, Column{Name: "n", Type: i32}), nil, &IncompatibleTypeError{}},
		{"text to int", cols(id, Column{Name: "n", Type: str}), cols(id, Column{Name: "n", Type: i32}), nil, &IncompatibleTypeError{}},
		{"decimal scale change", cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(10, 2)}), cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(12, 3)}), nil, &IncompatibleTypeError{}},
		{"decimal narrowing", cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(10, 2)}), cols(id, Column{Name: "d", Type: icego.DecimalTypeOf(8, 2)}), nil, &IncompatibleTypeError{}},
		{"rename looks like drop and add", cols(id, Column{Name: "a", Type: str}), cols(id, Column{Name: "b", Type: str}), nil, &AmbiguousChangeError{}},
		{"key dropped", cols(id, Column{Name: "a", Type: str}), cols(Column{Name: "a", Type: str}), nil, &KeyChangeError{}},
		{"key promoted", cols(id), cols(Column{Name: "id", Type: i64, Key: true}), nil, &KeyChangeError{}},
		{"key retyped", cols(id), cols(Column{Name: "id", Type: str, Key: true}), nil, &KeyChangeError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Diff("s.t", tt.cur, tt.next, Fail)
			if tt.wantErr != nil {
				target := reflect.New(reflect.TypeOf(tt.wantErr)).Interface()
				if !errors.As(err, target) {
					t.Fatalf("Diff() error = %v, want %T", err, tt.wantErr)
				}
				if err.Error() == "" {
					t.Fatalf("empty error message")
				}
				return
			}
			if err != nil {
				t.Fatalf("Diff() error = %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Diff() = %v, want %v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Kind != w.Kind || g.Name != w.Name || !sameType(g.Type, w.Type) || !sameType(g.From, w.From) {
					t.Errorf("Diff()[%d] = %v, want %v", i, g, w)
				}
			}
		})
	}
}

func sameType(a, b icego.Type) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equals(b)
}

// Under the new-column policy a type change Iceberg cannot promote keeps
// the old field under a free suffixed name and adds a new one; promotions,
// key changes and ambiguity are as under Fail.
func TestDiffNewColumn(t *testing.T) {
	id := Column{Name: "id", Type: i32, Key: true}
	tests := []struct {
		name      string
		cur, next []Column
		want      []Update
		wantErr   bool
	}{
		{"text to int", cols(id, Column{Name: "n", Type: str}), cols(id, Column{Name: "n", Type: i32}),
			[]Update{{Kind: Retype, Name: "n", From: str, Type: i32, As: "n__v2"}}, false},
		{"suffix taken", cols(id, Column{Name: "n", Type: str}, Column{Name: "n__v2", Type: str}), cols(id, Column{Name: "n", Type: i32}, Column{Name: "n__v2", Type: str}),
			[]Update{{Kind: Retype, Name: "n", From: str, Type: i32, As: "n__v3"}}, false},
		{"promotion stays a promotion", cols(id, Column{Name: "n", Type: i32}), cols(id, Column{Name: "n", Type: i64}),
			[]Update{{Kind: Promote, Name: "n", From: i32, Type: i64}}, false},
		{"drop, promote, retype, add in order", cols(id, Column{Name: "a", Type: str}, Column{Name: "n", Type: i32}, Column{Name: "d", Type: date}),
			cols(id, Column{Name: "n", Type: i64}, Column{Name: "d", Type: str}),
			[]Update{{Kind: Drop, Name: "a", From: str}, {Kind: Promote, Name: "n", From: i32, Type: i64}, {Kind: Retype, Name: "d", From: date, Type: str, As: "d__v2"}}, false},
		{"key retyped", cols(id), cols(Column{Name: "id", Type: str, Key: true}), nil, true},
		// After a retype the source's relation is compared again (a
		// restart, another DDL): the retired fields stay.
		{"retired fields stay", cols(id, Column{Name: "n__v2", Type: str}, Column{Name: "n__v3", Type: date}, Column{Name: "n", Type: i32}),
			cols(id, Column{Name: "n", Type: i32}), nil, false},
		{"retired field of a dropped column goes", cols(id, Column{Name: "n__v2", Type: str}, Column{Name: "n", Type: i32}),
			cols(id), []Update{{Kind: Drop, Name: "n__v2", From: str}, {Kind: Drop, Name: "n", From: i32}}, false},
		{"not a retired name", cols(id, Column{Name: "n__v1", Type: str}, Column{Name: "n__v02", Type: str}, Column{Name: "n", Type: i32}),
			cols(id, Column{Name: "n", Type: i32}), []Update{{Kind: Drop, Name: "n__v1", From: str}, {Kind: Drop, Name: "n__v02", From: str}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Diff("s.t", tt.cur, tt.next, NewColumn)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Diff() error = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Diff() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Reconcile with a Resolution: proven renames keep the field (promoted
// when the type widened), replaced columns are dropped and added even when
// that looks like a rename or is a type change Iceberg cannot promote, and
// what the resolution does not cover is still an error.
func TestReconcile(t *testing.T) {
	id := Column{Name: "id", Type: i32, Key: true}
	a, b, c := Column{Name: "a", Type: str}, Column{Name: "b", Type: str}, Column{Name: "c", Type: str}
	d := Column{Name: "d", Type: i32}
	tests := []struct {
		name      string
		cur, next []Column
		res       Resolution
		want      []Update
		wantErr   any
	}{
		{"rename", cols(id, a, b), cols(id, a, c), Resolution{Renames: map[string]string{"b": "c"}},
			[]Update{{Kind: Rename, Name: "b", As: "c", From: str, Type: str}}, nil},
		{"rename and add", cols(id, a, b), cols(id, a, c, d), Resolution{Renames: map[string]string{"b": "c"}},
			[]Update{{Kind: Rename, Name: "b", As: "c", From: str, Type: str}, {Kind: Add, Name: "d", Type: i32}}, nil},
		{"rename and promote", cols(id, d), cols(id, Column{Name: "e", Type: i64}), Resolution{Renames: map[string]string{"d": "e"}},
			[]Update{{Kind: Rename, Name: "d", As: "e", From: i32, Type: i64}}, nil},
		{"rename to an incompatible type is not one", cols(id, d), cols(id, Column{Name: "e", Type: str}), Resolution{Renames: map[string]string{"d": "e"}},
			nil, &AmbiguousChangeError{}},
		{"rename onto a name still there is not one", cols(id, b, c), cols(id, c), Resolution{Renames: map[string]string{"b": "c"}},
			[]Update{{Kind: Drop, Name: "b", From: str}}, nil},
		{"rename the resolution does not prove", cols(id, a, b), cols(id, a, c), Resolution{Renames: map[string]string{"a": "x"}},
			nil, &AmbiguousChangeError{}},
		{"replace all: drop and add", cols(id, a, b), cols(id, a, c), Resolution{All: true},
			[]Update{{Kind: Drop, Name: "b", From: str}, {Kind: Add, Name: "c", Type: str}}, nil},
		{"replace all: incompatible type", cols(id, a, d), cols(id, a, Column{Name: "d", Type: str}), Resolution{All: true},
			[]Update{{Kind: Drop, Name: "d", From: i32}, {Kind: Add, Name: "d", Type: str}}, nil},
		{"replace names", cols(id, a, b), cols(id, a, c), Resolution{Replace: map[string]bool{"b": true, "c": true}},
			[]Update{{Kind: Drop, Name: "b", From: str}, {Kind: Add, Name: "c", Type: str}}, nil},
		{"a known drop beside a new column", cols(id, a, b), cols(id, a, c), Resolution{Replace: map[string]bool{"b": true}},
			[]Update{{Kind: Drop, Name: "b", From: str}, {Kind: Add, Name: "c", Type: str}}, nil},
		{"uncovered drop and add", cols(id, a, b), cols(id, c, d), Resolution{Replace: map[string]bool{"b": true, "c": true}},
			nil, &AmbiguousChangeError{}},
		{"replace keeps key checks", cols(id, a), cols(Column{Name: "id", Type: str, Key: true}, a), Resolution{All: true},
			nil, &KeyChangeError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Reconcile("s.t", tt.cur, tt.next, Fail, tt.res)
			if tt.wantErr != nil {
				target := reflect.New(reflect.TypeOf(tt.wantErr)).Interface()
				if !errors.As(err, target) {
					t.Fatalf("Reconcile() = %v, %v; want %T", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reconcile() error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Reconcile() = %v, want %v", got, tt.want)
			}
		})
	}
}

// The ambiguity error names the table and columns and the command that
// gets past it, with nothing left for the reader to fill in.
func TestAmbiguousChangeErrorSaysWhatToRun(t *testing.T) {
	err := (&AmbiguousChangeError{Table: "app.users", Dropped: []string{"b"}, Added: []string{"c", "d"}}).Error()
	for _, w := range []string{"app.users: columns b disappeared and c, d appeared", "pg2iceberg backfill --table app.users", "pg2iceberg setup"} {
		if !strings.Contains(err, w) {
			t.Errorf("error does not say %q:\n%s", w, err)
		}
	}
	if strings.ContainsAny(err, "<>") {
		t.Errorf("error has a placeholder:\n%s", err)
	}
}
