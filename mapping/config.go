package mapping

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ConfigError is every problem found in a configuration file, each at its
// line, in the file's own terms (keys, rule numbers), never a Go type name.
type ConfigError struct {
	File     string // the file, for messages ("" reads "configuration")
	Problems []ConfigProblem
}

// ConfigProblem is one problem of a configuration file.
type ConfigProblem struct {
	Line int // 1-based; 0 for the file as a whole
	Msg  string
}

func (e *ConfigError) Error() string {
	name := e.File
	if name == "" {
		name = "configuration"
	}
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Line > 0 {
			out[i] = fmt.Sprintf("%s:%d: %s", name, p.Line, p.Msg)
		} else {
			out[i] = fmt.Sprintf("%s: %s", name, p.Msg)
		}
	}
	return strings.Join(out, "\n")
}

// Add records a problem at line.
func (e *ConfigError) Add(line int, format string, args ...any) {
	e.Problems = append(e.Problems, ConfigProblem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Err returns e sorted by line, or nil without problems.
func (e *ConfigError) Err() error {
	if len(e.Problems) == 0 {
		return nil
	}
	sort.SliceStable(e.Problems, func(i, j int) bool { return e.Problems[i].Line < e.Problems[j].Line })
	return e
}

// ReadConfig reads and checks the rules and tables of the configuration
// file at path. Its other top-level keys are the command's settings, read
// and checked by the command line (package main), not here.
func ReadConfig(path string) (*Overrides, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --config: %w", err)
	}
	return ParseConfig(path, data)
}

// ParseConfig is ReadConfig of a file already read: data, named path in
// messages.
func ParseConfig(path string, data []byte) (*Overrides, error) {
	o, err := parseConfig(path, data, true)
	if err != nil {
		return nil, err
	}
	o.File = path
	return o, nil
}

// The keys of each part of the file; a bool key's value is true or false.
var (
	topKeys   = []string{"rules", "tables"}
	ruleKeys  = []string{"type", "column", "to", "lossy", "zone", "added_later"}
	tableKeys = []string{"table", "type_change", "drop_table", "added_later", "retention", "compaction", "properties", "partition", "changelog_partition", "tiering", "sort", "format_version"}
	// retentionKeys are a tables entry's retention block's.
	retentionKeys = []string{"max_snapshot_age", "min_snapshots"}
	boolKeys      = []string{"added_later", "enabled"}
	// compactionKeys are those of a tables entry's compaction map.
	compactionKeys = []string{"enabled", "min_input_files", "max_live_files", "max_delete_files", "delete_ratio", "target_file_size_bytes"}
	mapKeys        = []string{"properties"} // a map of single values
	// listKeys are a tables entry's lists of single values.
	listKeys = []string{"partition", "changelog_partition", "sort"}
	// tieringKeys are those of a tables entry's tiering map.
	tieringKeys = []string{"column", "cold_after", "cold_location", "storage_class"}
)

// decodeConfig parses the file's YAML and checks its shape (which keys,
// lists and single values go where) before decoding it into r.
// With settings, top-level keys other than rules and tables are left to
// the caller.
func decodeConfig(name string, data []byte, r *Overrides, settings bool) *ConfigError {
	e := &ConfigError{File: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e.Problems = append(e.Problems, syntaxProblem(data, err))
		return e
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		e.Add(0, "the file is empty: a configuration has rules: or tables: (see docs/configuration.md#the-configuration-file)")
		return e
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		e.Add(root.Line, "the file must be a map with the keys rules and tables, not %s", kindName(root))
		return e
	}
	if !settings {
		checkKeys(e, root, "the file", topKeys, false)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		what, keys := "rule", ruleKeys
		if key.Value == "tables" {
			what, keys = "tables entry", tableKeys
		} else if key.Value != "rules" {
			continue
		}
		if val.Tag == "!!null" {
			continue
		}
		if val.Kind != yaml.SequenceNode {
			e.Add(val.Line, "%s must be a list, each entry starting with -, not %s", key.Value, kindName(val))
			continue
		}
		for j, item := range val.Content {
			where := fmt.Sprintf("%s %d", what, j+1)
			if item.Kind != yaml.MappingNode {
				e.Add(item.Line, "%s must be a map of keys (%s), not %s", where, strings.Join(keys, ", "), kindName(item))
				continue
			}
			checkKeys(e, item, where, keys, true)
		}
	}
	if len(e.Problems) > 0 {
		return e
	}
	if err := root.Decode(r); err != nil {
		e.Add(root.Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return e
	}
	for i := range r.Overrides {
		r.Overrides[i].Line = itemLine(root, "rules", i)
	}
	for i := range r.Tables {
		r.Tables[i].Line = itemLine(root, "tables", i)
	}
	return e
}

// checkKeys checks that a map has only the allowed keys, each once, and
// with scalars each value a single one (true or false for a bool key).
func checkKeys(e *ConfigError, m *yaml.Node, where string, allowed []string, scalars bool) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		switch {
		case !slices.Contains(allowed, key.Value):
			e.Add(key.Line, "%s: unknown key %q (the keys are %s)", where, key.Value, strings.Join(allowed, ", "))
			continue
		case seen[key.Value] > 0:
			e.Add(key.Line, "%s: key %s given twice (also at line %d)", where, key.Value, seen[key.Value])
			continue
		}
		seen[key.Value] = key.Line
		if !scalars {
			continue
		}
		if key.Value == "retention" && val.Kind == yaml.MappingNode {
			checkKeys(e, val, where+": retention", retentionKeys, true)
			continue
		}
		if key.Value == "compaction" && val.Kind == yaml.MappingNode {
			checkKeys(e, val, where+": compaction", compactionKeys, true)
			continue
		}
		if key.Value == "tiering" && val.Kind == yaml.MappingNode {
			checkKeys(e, val, where+": tiering", tieringKeys, true)
			continue
		}
		if slices.Contains(mapKeys, key.Value) {
			checkScalarMap(e, val, where+": "+key.Value)
			continue
		}
		if slices.Contains(listKeys, key.Value) {
			checkScalarList(e, val, where+": "+key.Value)
			continue
		}
		if val.Kind != yaml.ScalarNode {
			e.Add(val.Line, "%s: %s must be a single value, not %s", where, key.Value, kindName(val))
			continue
		}
		if slices.Contains(boolKeys, key.Value) {
			if _, err := strconv.ParseBool(val.Value); err != nil {
				e.Add(val.Line, "%s: %s is %q; use true or false", where, key.Value, val.Value)
			}
		}
	}
}

// checkScalarList checks that l is a list of single values.
func checkScalarList(e *ConfigError, l *yaml.Node, where string) {
	if l.Kind != yaml.SequenceNode {
		e.Add(l.Line, "%s must be a list of single values, e.g. [\"day(created_at)\", \"bucket(16, id)\"], not %s", where, kindName(l))
		return
	}
	for _, v := range l.Content {
		if v.Kind != yaml.ScalarNode {
			e.Add(v.Line, "%s: each entry must be a single value, not %s", where, kindName(v))
		}
	}
}

// checkScalarMap checks that m is a map of single values.
func checkScalarMap(e *ConfigError, m *yaml.Node, where string) {
	if m.Kind != yaml.MappingNode {
		e.Add(m.Line, "%s must be a map of names to values, not %s", where, kindName(m))
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if key, val := m.Content[i], m.Content[i+1]; val.Kind != yaml.ScalarNode {
			e.Add(val.Line, "%s: %s must be a single value, not %s", where, key.Value, kindName(val))
		}
	}
}

// itemLine is the line of entry i of the list under key.
func itemLine(root *yaml.Node, key string, i int) int {
	for k := 0; k+1 < len(root.Content); k += 2 {
		if root.Content[k].Value == key && i < len(root.Content[k+1].Content) {
			return root.Content[k+1].Content[i].Line
		}
	}
	return 0
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	}
	return fmt.Sprintf("the value %q", n.Value)
}

var yamlErrRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// syntaxProblem turns a YAML syntax error into a problem at the line where
// it is. The YAML library reports the line where the enclosing block
// starts (often line 1), so the line is found again: the first prefix of
// whole lines that fails with the same message ends at the problem.
func syntaxProblem(data []byte, err error) ConfigProblem {
	m := yamlErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		return ConfigProblem{Msg: "not valid YAML: " + err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := 1; n <= len(lines); n++ {
		var node yaml.Node
		if perr := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node); perr != nil && strings.HasSuffix(perr.Error(), m[2]) {
			line = n
			break
		}
	}
	return ConfigProblem{Line: line, Msg: "not valid YAML: " + m[2]}
}
