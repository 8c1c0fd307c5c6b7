package replication

import (
	"strings"
	"testing"
)

func TestSlotName(t *testing.T) {
	long := strings.Repeat("p", 60)
	for _, tc := range []struct{ pub, want string }{
		{"shop_pub", "pg2iceberg_shop_pub"}, // valid names keep the name every earlier release derived
		{"p2", "pg2iceberg_p2"},
		{"Shop-Pub", "pg2iceberg_shop_pub_bd950fe3"},
		{"shop-pub", "pg2iceberg_shop_pub_102ec6e3"},
		{"it's", "pg2iceberg_it_s_a89ef012"},
		{"MixedCase", "pg2iceberg_mixedcase_a96651e4"},
		{"café", "pg2iceberg_caf___a82b5049"},
		{long, "pg2iceberg_" + long[:43] + "_73896435"},
	} {
		got := SlotName(tc.pub)
		if got != tc.want {
			t.Errorf("SlotName(%q) = %q, want %q", tc.pub, got, tc.want)
		}
		if err := ValidateSlotName(got); err != nil {
			t.Errorf("SlotName(%q) = %q: %v", tc.pub, got, err)
		}
	}
	for _, bad := range []string{"", "My_Slot", "my-slot", "slot name", strings.Repeat("s", 64), "ünï"} {
		if err := ValidateSlotName(bad); err == nil || !strings.Contains(err.Error(), "--slot") {
			t.Errorf("ValidateSlotName(%q) = %v, want an error about --slot", bad, err)
		}
	}
	if err := ValidateSlotName(strings.Repeat("s", 63)); err != nil {
		t.Errorf("ValidateSlotName(63 bytes) = %v", err)
	}
}

// publicationOption quotes the name as pgoutput reads it: one identifier
// in SplitIdentifierString's syntax, inside a single-quoted string of the
// replication command.
func TestPublicationOption(t *testing.T) {
	for _, tc := range []struct{ pub, want string }{
		{"shop_pub", `publication_names '"shop_pub"'`},
		{"MixedCase", `publication_names '"MixedCase"'`},
		{"it's", `publication_names '"it''s"'`},
		{`a "b", c`, `publication_names '"a ""b"", c"'`},
	} {
		if got := publicationOption(tc.pub); got != tc.want {
			t.Errorf("publicationOption(%q) = %s, want %s", tc.pub, got, tc.want)
		}
	}
}
