package mapping

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every problem of a configuration file is named in the file's terms
// (keys, rule numbers, never a Go type), each at the line where it is.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", "", "configuration: the file is empty: a configuration has rules: or tables: (see docs/configuration.md#the-configuration-file)"},
		{"only a comment", "# rules: later\n", "configuration: the file is empty: a configuration has rules: or tables: (see docs/configuration.md#the-configuration-file)"},
		{"unknown top key", "rule:\n  - type: numeric\n    to: string\n",
			`configuration:1: the file: unknown key "rule" (the keys are rules, tables)`},
		{"unknown rule key", "rules:\n  - type: numeric\n    to: string\n  - colum: a.b.c\n    to: exclude\n",
			`configuration:4: rule 2: unknown key "colum" (the keys are type, column, to, lossy, zone, added_later)`},
		{"unknown table key", "tables:\n  - table: a.b\n    typechange: fail\n",
			`configuration:3: tables entry 1: unknown key "typechange" (the keys are table, type_change, drop_table, added_later, retention, compaction, properties, partition, changelog_partition, tiering, sort, format_version)`},
		{"unknown compaction key", "tables:\n  - table: a.b\n    compaction:\n      enable: false\n",
			`configuration:4: tables entry 1: compaction: unknown key "enable" (the keys are enabled, min_input_files, max_live_files, max_delete_files, delete_ratio, target_file_size_bytes)`},
		{"compaction enabled not a bool", "tables:\n  - table: a.b\n    compaction:\n      enabled: no way\n",
			`configuration:4: tables entry 1: compaction: enabled is "no way"; use true or false`},
		{"compaction out of range", "tables:\n  - table: a.b\n    compaction:\n      delete_ratio: 2\n      min_input_files: 1\n",
			"configuration:2: tables entry 1: compaction min_input_files is 1; use 2 or more"},
		{"properties not a map", "tables:\n  - table: a.b\n    properties: zstd\n",
			`configuration:3: tables entry 1: properties must be a map of names to values, not the value "zstd"`},
		{"a property a list", "tables:\n  - table: a.b\n    properties:\n      write.parquet.compression-codec: [zstd]\n",
			"configuration:4: tables entry 1: properties: write.parquet.compression-codec must be a single value, not a list"},
		{"every problem at once", "rules:\n  - type: numeric\n    to: strin\n  - colum: a.b.c\n    to: exclude\n",
			"configuration:4: rule 2: unknown key \"colum\" (the keys are type, column, to, lossy, zone, added_later)"},
		{"indentation, further down", "rules:\n  - type: numeric\n    to: string\n  - column: a.b.c\n  to: exclude\n",
			"configuration:5: not valid YAML: did not find expected '-' indicator"},
		{"a tab", "rules:\n  - type: numeric\n    to: string\n\t- column: x\n",
			"configuration:4: not valid YAML: found a tab character that violates indentation"},
		{"rules not a list", "rules:\n  type: numeric\n",
			"configuration:2: rules must be a list, each entry starting with -, not a map"},
		{"the file a list", "- type: numeric\n",
			"configuration:1: the file must be a map with the keys rules and tables, not a list"},
		{"a list as value", "rules:\n  - type: numeric\n    to: [string]\n",
			"configuration:3: rule 1: to must be a single value, not a list"},
		{"a key twice", "rules:\n  - type: numeric\n    to: string\n    to: exclude\n",
			"configuration:4: rule 1: key to given twice (also at line 3)"},
		{"added_later not a bool", "rules:\n  - column: a.b.c\n    to: exclude\n    added_later: soon\n",
			`configuration:4: rule 1: added_later is "soon"; use true or false`},
		{"bad value at its rule's line", "rules:\n  - type: numeric\n    to: string\n  - type: jsonb\n    to: float\n",
			`configuration:4: rule 2: to: "float"; use string, decimal(P,S), timestamptz or exclude`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOverrides([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseOverrides(%q) succeeded, want %q", tc.yaml, tc.want)
			}
			if got := err.Error(); !slices.Contains(strings.Split(got, "\n"), tc.want) {
				t.Errorf("ParseOverrides(%q) error =\n%s\nwant a line\n%s", tc.yaml, got, tc.want)
			}
		})
	}
	// Both problems of one file, in line order.
	_, err := ParseOverrides([]byte("rules:\n  - type: numeric\n    to: strin\n  - column: a.b\n    to: exclude\n"))
	want := "configuration:2: rule 1: to: \"strin\"; use string, decimal(P,S), timestamptz or exclude\nconfiguration:4: rule 2: column \"a.b\" must be schema.table.column"
	if err == nil || err.Error() != want {
		t.Errorf("two problems: error =\n%v\nwant\n%s", err, want)
	}
}

// A tables entry's properties reach Policies, the * entry's for a table
// without its own.
func TestConfigProperties(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: '*'\n    properties:\n      write.parquet.compression-codec: gzip\n  - table: s.t\n    properties:\n      write.parquet.compression-codec: snappy\n      write.target-file-size-bytes: 1048576\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Policies("s.t").Properties; len(got) != 2 || got["write.parquet.compression-codec"] != "snappy" || got["write.target-file-size-bytes"] != "1048576" {
		t.Errorf("Policies(s.t).Properties = %v, want snappy and 1048576", got)
	}
	if got := o.Policies("s.u").Properties; len(got) != 1 || got["write.parquet.compression-codec"] != "gzip" {
		t.Errorf("Policies(s.u).Properties = %v, want the * entry's gzip", got)
	}
}

// ReadConfig names the file in every message and keeps each rule's line.
func TestReadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(path, []byte("# rules\nrules:\n  - type: numeric\n    to: string\n  - column: a.b.c\n    to: exclude\n    added_later: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if o.File != path || o.Overrides[0].Line != 3 || o.Overrides[1].Line != 5 || !o.Overrides[1].AddedLater {
		t.Errorf("ReadConfig = file %q, rules %+v; want the file, lines 3 and 5, the second added_later", o.File, o.Overrides)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(path); err == nil || err.Error() != path+": the file is empty: a configuration has rules: or tables: (see docs/configuration.md#the-configuration-file)" {
		t.Errorf("ReadConfig(empty) error = %v", err)
	}
}

// A retention block is read per table, a table's own fields win over the
// * entry's, and a bad key or a negative value is named.
func TestConfigRetention(t *testing.T) {
	o, err := ParseOverrides([]byte("tables:\n  - table: \"*\"\n    retention: {max_snapshot_age: 24h, min_snapshots: 50}\n  - table: s.t\n    retention:\n      min_snapshots: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Policies("s.t").Retention; got != (Retention{MaxSnapshotAge: 24 * time.Hour, MinSnapshots: 5}) {
		t.Errorf("s.t retention = %+v, want 24h and 5", got)
	}
	if got := o.Policies("s.u").Retention; got != (Retention{MaxSnapshotAge: 24 * time.Hour, MinSnapshots: 50}) {
		t.Errorf("s.u retention = %+v, want the * entry's", got)
	}
	for in, want := range map[string]string{
		"tables:\n  - table: s.t\n    retention: {keep: 3}\n":              `unknown key "keep"`,
		"tables:\n  - table: s.t\n    retention: {min_snapshots: -1}\n":    "min_snapshots -1 is negative",
		"tables:\n  - table: s.t\n    retention: {max_snapshot_age: 1x}\n": "1x",
	} {
		if _, err := ParseOverrides([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOverrides(%q) = %v, want an error naming %q", in, err, want)
		}
	}
}
