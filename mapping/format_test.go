package mapping

import (
	"strings"
	"testing"
)

func TestPoliciesFormatVersion(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: \"*\"\n    format_version: 3\n  - table: public.a\n    format_version: 2\n  - table: public.b\n    sort: [id]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{"public.a": 2, "public.b": 3, "public.c": 3} {
		if got := o.Policies(table).FormatVersion; got != want {
			t.Errorf("Policies(%s).FormatVersion = %d, want %d", table, got, want)
		}
	}
	if got := (*Overrides)(nil).Policies("public.a").FormatVersion; got != 0 {
		t.Errorf("no configuration: FormatVersion = %d, want 0 (the table's own)", got)
	}
	_, err = ParseOverrides([]byte("tables:\n  - table: public.a\n    format_version: 4\n"))
	if err == nil || !strings.Contains(err.Error(), "format_version is 4; use 2") {
		t.Errorf("format_version 4: error %v, want one naming it", err)
	}
}
