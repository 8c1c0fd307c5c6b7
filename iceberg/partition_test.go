package iceberg

import (
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

func TestParsePartitionField(t *testing.T) {
	for _, tc := range []struct {
		in, col, tr, err string
	}{
		{in: "region", col: "region", tr: "identity"},
		{in: "identity(region)", col: "region", tr: "identity"},
		{in: "day(created_at)", col: "created_at", tr: "day"},
		{in: "days(created_at)", col: "created_at", tr: "day"},
		{in: " HOUR( at ) ", col: "at", tr: "hour"},
		{in: "year(d)", col: "d", tr: "year"},
		{in: "month(d)", col: "d", tr: "month"},
		{in: "bucket(16, id)", col: "id", tr: "bucket[16]"},
		{in: "truncate(4,name)", col: "name", tr: "truncate[4]"},
		{in: "bucket(id)", err: "takes a number and a column"},
		{in: "bucket(0, id)", err: "not a positive number"},
		{in: "day(a, b)", err: "takes one column"},
		{in: "week(ts)", err: `unknown transform "week"`},
		{in: "day(ts", err: "closing parenthesis"},
		{in: " ", err: "empty"},
	} {
		col, tr, err := ParsePartitionField(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePartitionField(%q) error = %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || col != tc.col || tr.String() != tc.tr {
			t.Errorf("ParsePartitionField(%q) = %q, %v, %v; want %q, %s", tc.in, col, tr, err, tc.col, tc.tr)
		}
	}
}

func TestConfiguredSpec(t *testing.T) {
	sc := icego.NewSchema(0,
		icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int32, Required: true},
		icego.NestedField{ID: 2, Name: "created_at", Type: icego.PrimitiveTypes.TimestampTz},
		icego.NestedField{ID: 3, Name: "name", Type: icego.PrimitiveTypes.String},
	)
	spec, err := ConfiguredSpec(sc, []string{"day(created_at)", "bucket(16, id)", "truncate(4, name)"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range spec.Fields() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "created_at_day,id_bucket_16,name_trunc_4" {
		t.Errorf("field names %s", got)
	}
	for fields, want := range map[string]string{
		"day(nosuch)": "no column nosuch",
		"day(name)":   "cannot partition column name",
	} {
		if _, err := ConfiguredSpec(sc, []string{fields}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ConfiguredSpec(%s) error = %v, want one containing %q", fields, err, want)
		}
	}
	// Values: a timestamp's day, a bucket, a truncated string, NULL.
	for _, tc := range []struct {
		tr   icego.Transform
		in   any
		want any
	}{
		{icego.DayTransform{}, icego.Timestamp(86400 * 1_000_000 * 3), icego.Date(3)},
		{icego.TruncateTransform{Width: 4}, "abcdef", "abcd"},
		{icego.IdentityTransform{}, int32(7), int32(7)},
		{icego.BucketTransform{NumBuckets: 16}, nil, nil},
	} {
		got, err := transformValue(tc.tr, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s(%v) = %v (%T), %v; want %v (%T)", tc.tr, tc.in, got, got, err, tc.want, tc.want)
		}
	}
}
