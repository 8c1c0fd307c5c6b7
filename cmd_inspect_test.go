package main

import (
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

func TestParseWhere(t *testing.T) {
	sc := icego.NewSchema(0,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int32, Required: true},
		icego.NestedField{ID: 2, Name: "name", Type: icego.PrimitiveTypes.String},
		icego.NestedField{ID: 3, Name: "day", Type: icego.PrimitiveTypes.Date},
	)
	for _, tc := range []struct{ in, want string }{
		{"id < 100", `LessThan(term=Reference(name='id'), literal=100)`},
		{"id >= 1 AND id < 9 and name = 'it''s'", `And(left=And(left=GreaterThanEqual(term=Reference(name='id'), literal=1), right=LessThan(term=Reference(name='id'), literal=9)), right=Equal(term=Reference(name='name'), literal=it's))`},
		{"day = '2026-12-01'", `Equal(term=Reference(name='day'), literal=2026-12-01)`},
		{"id != 3", `NotEqual(term=Reference(name='id'), literal=3)`},
	} {
		e, err := parseWhere(tc.in, sc)
		if err != nil {
			t.Errorf("parseWhere(%q) = %v", tc.in, err)
			continue
		}
		if e == nil {
			t.Errorf("parseWhere(%q) = nil", tc.in)
		} else if got := e.String(); got != tc.want {
			t.Errorf("parseWhere(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		// The parser is history's (its own tests cover the language);
		// here: inspect reports its errors and binds to the table.
		{"id", `--where "id"`},
		{"id < ", `--where "id < "`},
		{"nosuch = 1", "no column nosuch"},
		{"day = 'monday'", "--where \"day = 'monday'\""},
	} {
		_, err := parseWhere(tc.in, sc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseWhere(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
