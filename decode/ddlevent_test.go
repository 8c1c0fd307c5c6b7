package decode

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDDLEvent(t *testing.T) {
	long := strings.Repeat("9", 5000)
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"rename", `{"relid": 16384, "tag": "ALTER TABLE", "schema": "public", "table": "t", "columns": [{"attnum": 1, "name": "id", "type_oid": 23, "typmod": -1, "key": true}]}`, true},
		{"drop", `{"relid": 16384, "tag": "DROP TABLE", "schema": "public", "table": "t"}`, true},
		{"truncated", `{"relid": ` + long, false},
		{"number too large", `{"relid": ` + long + `}`, false},
		{"wrong type", `{"relid": "` + long + `", "tag": "x"}`, false},
		{"no relid", `{"tag": "DROP TABLE"}`, false},
		{"no tag", `{"relid": 1}`, false},
		{"not json", `sig:00` + long, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseDDLEvent([]byte(tc.body))
			if tc.ok != (err == nil) {
				t.Fatalf("ParseDDLEvent(%.40q) = %v, %v; want ok %t", tc.body, ev, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, ErrMalformedDDL) || strings.Contains(err.Error(), "99999")) {
				t.Errorf("ParseDDLEvent(%.40q) error %q: want ErrMalformedDDL without the body", tc.body, err)
			}
		})
	}
}
