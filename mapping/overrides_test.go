package mapping

import (
	"strings"
	"testing"
	"time"
)

func TestParseOverrides(t *testing.T) {
	good := `rules:
  - type: numeric
    to: decimal(38,9)
  - column: public.users.ssn
    to: exclude
  - column: public.t.p
    to: string
    lossy: allow
`
	o, err := ParseOverrides([]byte(good))
	if err != nil {
		t.Fatalf("ParseOverrides(good) error = %v", err)
	}
	if r := o.Match("public.t", "amount", "numeric"); r == nil || r.To != "decimal(38,9)" {
		t.Errorf("Match(numeric) = %v, want the type rule", r)
	}
	if r := o.Match("public.t", "amount", "numeric(10,2)"); r == nil {
		t.Errorf("Match(numeric(10,2)) = nil, want the type rule (modifiers ignored)")
	}
	if r := o.Match("public.users", "ssn", "text"); r == nil || !r.Excluded() {
		t.Errorf("Match(ssn) = %v, want exclude", r)
	}
	tz, err := ParseOverrides([]byte("rules:\n  - type: timestamp without time zone\n    to: timestamptz\n    zone: Europe/Paris\n  - column: a.b.c\n    to: timestamptz\n"))
	if err != nil {
		t.Fatalf("ParseOverrides(timestamptz) error = %v", err)
	}
	if r := tz.Match("s.t", "at", "timestamp(3) without time zone"); r.Location() == nil || r.Location().String() != "Europe/Paris" {
		t.Errorf("timestamptz rule location = %v, want Europe/Paris", r.Location())
	}
	if r := tz.Match("a.b", "c", "timestamp without time zone"); r.Location() != time.UTC {
		t.Errorf("timestamptz rule without zone: location = %v, want UTC", r.Location())
	}
	if _, err := For("s.t", Column{Name: "d", TypeOID: OIDDate, TypeMod: -1, TypeName: "date", Rule: tz.Match("s.t", "at", "timestamp without time zone")}); err == nil || !strings.Contains(err.Error(), "applies to timestamp without time zone columns") {
		t.Errorf("timestamptz rule on a date column: error = %v", err)
	}
	if r := o.Match("public.t", "x", "text"); r != nil {
		t.Errorf("Match(unmatched) = %v, want nil", r)
	}
	bad := []struct{ yaml, want string }{
		{"rules:\n  - to: string\n", "exactly one of"},
		{"rules:\n  - type: numeric\n    column: a.b.c\n    to: string\n", "exactly one of"},
		{"rules:\n  - column: t.c\n    to: string\n", "schema.table.column"},
		{"rules:\n  - type: numeric\n    to: decimal(40,2)\n", "precision"},
		{"rules:\n  - type: numeric\n    to: float\n", "use string"},
		{"rules:\n  - type: numeric\n    to: string\n    lossy: maybe\n", "lossy"},
		{"rulez: []\n", "rulez"},
		{"tables:\n  - table: orders\n", "schema.table or *"},
		{"tables:\n  - table: public.orders\n    type_change: widen\n", "use fail or new-column"},
		{"tables:\n  - table: '*'\n    drop_table: archive\n", "use keep or drop"},
		{"rules:\n  - type: timestamp without time zone\n    to: timestamptz\n    zone: Mars/Olympus\n", "IANA time zone"},
		{"rules:\n  - type: numeric\n    to: string\n    zone: UTC\n", "zone applies only"},
	}
	for _, tc := range bad {
		_, err := ParseOverrides([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseOverrides(%q) error = %v, want one mentioning %q", tc.yaml, err, tc.want)
		}
	}
}

func TestRoundDecimal(t *testing.T) {
	for _, tc := range []struct {
		in    string
		scale int
		want  string
	}{
		{"1.005", 2, "1.01"}, {"-1.005", 2, "-1.01"}, {"2.499", 2, "2.50"}, {"0.004", 2, "0.00"},
		{"-0.004", 2, "0.00"}, {"123", 0, "123"}, {"123.5", 0, "124"}, {"1e3", 1, "1000.0"},
	} {
		got, err := RoundDecimal([]byte(tc.in), tc.scale)
		if err != nil || string(got) != tc.want {
			t.Errorf("RoundDecimal(%q, %d) = %q, %v, want %q", tc.in, tc.scale, got, err, tc.want)
		}
	}
	if _, err := RoundDecimal([]byte("NaN"), 2); err == nil {
		t.Errorf("RoundDecimal(NaN) succeeded, want an error")
	}
}

func TestPolicies(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: public.orders\n    type_change: new-column\n  - table: '*'\n    drop_table: drop\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o                      *Overrides
		table, change, dropTab string
	}{
		{o, "public.orders", "new-column", "keep"},
		{o, "public.other", "fail", "drop"},
		{nil, "public.orders", "fail", "keep"},
	} {
		p := tc.o.Policies(tc.table)
		if p.TypeChange != tc.change || p.DropTable != tc.dropTab {
			t.Errorf("Policies(%s) = %+v, want type_change %s, drop_table %s", tc.table, p, tc.change, tc.dropTab)
		}
	}
}

func TestPoliciesCompaction(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: public.orders\n    compaction:\n      enabled: false\n  - table: public.events\n    compaction:\n      min_input_files: 4\n      delete_ratio: 0.5\n      target_file_size_bytes: 1048576\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := o.Policies("public.orders").Compaction; c == nil || c.Enabled == nil || *c.Enabled {
		t.Errorf("Policies(public.orders).Compaction = %+v, want enabled false", c)
	}
	want := CompactionPolicy{MinInputFiles: 4, DeleteRatio: 0.5, TargetFileBytes: 1 << 20}
	if c := o.Policies("public.events").Compaction; c == nil || *c != want {
		t.Errorf("Policies(public.events).Compaction = %+v, want %+v", c, want)
	}
	if c := o.Policies("public.other").Compaction; c != nil {
		t.Errorf("Policies(public.other).Compaction = %+v, want nil", c)
	}
}
