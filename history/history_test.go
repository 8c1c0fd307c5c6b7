package history

import (
	"strings"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
)

func TestParsePoint(t *testing.T) {
	tests := []struct {
		in   string
		want Point
	}{
		{"123", Point{Kind: Snapshot, ID: 123}},
		{"snapshot:-5", Point{Kind: Snapshot, ID: -5}},
		{"current", Point{}},
		{"ref:month-end", Point{Kind: Ref, Ref: "month-end"}},
		{"lsn:0/16B3748", Point{Kind: LSN, LSN: 0x16B3748}},
		{"time:2026-12-02T03:00:00Z", Point{Kind: Time, Time: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)}},
	}
	for _, tc := range tests {
		got, err := ParsePoint(tc.in)
		if err != nil || got.Kind != tc.want.Kind || got.ID != tc.want.ID || got.Ref != tc.want.Ref || got.LSN != tc.want.LSN || !got.Time.Equal(tc.want.Time) {
			t.Errorf("ParsePoint(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"abc":            "not a number",
		"lsn:16B3748":    "not of the form 0/16B3748",
		"time:yesterday": "not RFC 3339",
		"tag:x":          `unknown kind "tag"`,
		"ref:":           "empty",
	} {
		if _, err := ParsePoint(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePoint(%q) error = %v, want one saying %q", in, err, want)
		}
	}
}

func TestParseWhere(t *testing.T) {
	schema := icego.NewSchema(0,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int32, Required: true},
		icego.NestedField{ID: 2, Name: "status", Type: icego.PrimitiveTypes.String},
		icego.NestedField{ID: 3, Name: "day", Type: icego.PrimitiveTypes.Date},
		icego.NestedField{ID: 4, Name: "and", Type: icego.PrimitiveTypes.Bool},
	)
	good := map[string]string{
		"id = 5":                              "Equal",
		"id >= 1 and status != 'x''y'":        "And",
		"status is null or id in (1, 2, 3)":   "Or",
		"not (day < '2026-12-01')":            "Not",
		`status IS NOT NULL AND "and" = true`: "And",
		"status like 'op%'":                   "StartsWith",
		"id not in (4, 5)":                    "NotIn",
	}
	for in, want := range good {
		f, err := ParseWhere(in)
		if err != nil {
			t.Errorf("ParseWhere(%q): %v", in, err)
			continue
		}
		if err := f.Bind(schema); err != nil {
			t.Errorf("ParseWhere(%q).Bind: %v", in, err)
		}
		if got := f.Expr.String(); !strings.Contains(got, want) {
			t.Errorf("ParseWhere(%q) = %s, want a %s", in, got, want)
		}
	}
	bad := map[string]string{
		"id =":              "expected a literal",
		"id = 'open":        "not closed",
		"id == 5":           "expected a literal",
		"id ! 5":            "write != for not equal",
		"id = 5 status = 1": "join conditions with and / or",
		"(id = 5":           "expected )",
		"id = null":         "is null",
		"status like '%x'":  "prefix pattern",
		"and = 1":           "keyword",
		"id in 1":           "expected ( after in",
		"id ~ 1":            "unexpected",
	}
	for in, want := range bad {
		if _, err := ParseWhere(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWhere(%q) error = %v, want one saying %q", in, err, want)
		}
	}
	for in, want := range map[string]string{
		"nope = 1":        `no column nope (the columns: id, status, day, and)`,
		"id = 'abc'":      "--where",
		"day = 'someday'": "--where",
	} {
		f, err := ParseWhere(in)
		if err != nil {
			t.Fatalf("ParseWhere(%q): %v", in, err)
		}
		if err := f.Bind(schema); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWhere(%q).Bind error = %v, want one saying %q", in, err, want)
		}
	}
}

func TestPairChanges(t *testing.T) {
	row := func(id, v any) diffRow {
		cells := []Cell{{JSON: id}, {JSON: v}}
		return diffRow{cells: cells, sig: signature(cells, nil)}
	}
	before := []diffRow{row(1, "a"), row(2, "b"), row(3, "c"), row(5, "same")}
	after := []diffRow{row(2, "B"), row(3, "c"), row(4, "d"), row(5, "same")}
	got := pairChanges(before, after, []int{0})
	var kinds []string
	for _, c := range got {
		kinds = append(kinds, c.Kind)
	}
	if want := "deleted updated inserted"; strings.Join(kinds, " ") != want {
		t.Errorf("pairChanges by key = %v, want %s", kinds, want)
	}
	got = pairChanges(before, after, nil) // kept by the whole row: no updates
	kinds = nil
	for _, c := range got {
		kinds = append(kinds, c.Kind)
	}
	if len(kinds) != 4 || strings.Count(strings.Join(kinds, " "), "updated") != 0 {
		t.Errorf("pairChanges by whole row = %v, want 2 deleted and 2 inserted", kinds)
	}
}
