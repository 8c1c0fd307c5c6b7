package mapping

import (
	"strings"
	"testing"
	"time"
)

func TestPoliciesTiering(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: public.events\n    tiering:\n      column: at\n      cold_after: 720h\n      cold_location: s3://cold/tier\n      storage_class: STANDARD_IA\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := TieringPolicy{Column: "at", ColdAfter: 720 * time.Hour, ColdLocation: "s3://cold/tier", StorageClass: "STANDARD_IA"}
	if c := o.Policies("public.events").Tiering; c == nil || *c != want {
		t.Errorf("Policies(public.events).Tiering = %+v, want %+v", c, want)
	}
	for body, msg := range map[string]string{
		"cold_after: -1h":          "cold_after -1h0m0s is negative",
		"cold_location: cold/tier": `cold_location "cold/tier" must be s3://bucket/prefix or an absolute directory`,
		"cold_after_days: 3":       `unknown key "cold_after_days"`,
	} {
		_, err := ParseOverrides([]byte("tables:\n  - table: public.events\n    tiering:\n      " + body + "\n"))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("tiering %s: error %v, want one with %q", body, err, msg)
		}
	}
}
