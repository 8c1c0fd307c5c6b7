package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// The configuration file holds, besides its rules: and tables:, the
// commands' settings: each top-level key is a flag's name (flush_interval
// or flush-interval for --flush-interval), and a map groups the flags that
// share a first word (s3: {endpoint: ..., region: ...} for --s3-endpoint and
// --s3-region). A setting applies to every command that has the flag.
// Precedence: flags over the environment (PG2ICEBERG_<FLAG>) over the file:
// the file's settings enter the process as defaults of those variables,
// so a flag the file gives counts as given (a required one is satisfied).

// setting is one of the file's settings: the flag it sets and its values
// (more than one only for a list flag).
type setting struct {
	name   string // the flag's name, e.g. flush-interval
	line   int
	values []string
}

// readSettings reads the settings of the configuration file path (its
// contents: data), checking that each names a flag some command has, with
// a value it takes.
func readSettings(path string, data []byte, known map[string]cli.Flag) ([]setting, *mapping.ConfigError) {
	e := &mapping.ConfigError{File: path}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, e // the rules' reader says what is wrong with the file
	}
	var out []setting
	seen := map[string]int{}
	var walk func(prefix string, m *yaml.Node)
	walk = func(prefix string, m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, val := m.Content[i], m.Content[i+1]
			name := prefix + strings.ReplaceAll(key.Value, "_", "-")
			if prefix == "" && (name == "rules" || name == "tables") {
				continue
			}
			if val.Kind == yaml.MappingNode && known[name] == nil {
				walk(name+"-", val)
				continue
			}
			s, problem := settingOf(name, key, val, known)
			switch {
			case problem != "":
				e.Add(key.Line, "%s", problem)
			case seen[name] > 0:
				e.Add(key.Line, "%s is given twice (also at line %d)", name, seen[name])
			default:
				seen[name] = key.Line
				out = append(out, s)
			}
		}
	}
	walk("", doc.Content[0])
	return out, e
}

// settingOf checks one setting: a flag of that name that the environment
// can set, and values it parses.
func settingOf(name string, key, val *yaml.Node, known map[string]cli.Flag) (setting, string) {
	f := known[name]
	if f == nil {
		return setting{}, fmt.Sprintf("unknown key %q: a setting is the name of a flag of a pg2iceberg command (%s)%s", key.Value, "see docs/configuration.md#settings", suggest(name, known))
	}
	s := setting{name: name, line: key.Line}
	switch val.Kind {
	case yaml.ScalarNode:
		s.values = []string{val.Value}
	case yaml.SequenceNode:
		if _, list := f.(*cli.StringSliceFlag); !list {
			return s, fmt.Sprintf("%s takes one value, not a list", key.Value)
		}
		for _, item := range val.Content {
			if item.Kind != yaml.ScalarNode {
				return s, fmt.Sprintf("%s: each entry of the list must be a single value", key.Value)
			}
			s.values = append(s.values, item.Value)
		}
	default:
		return s, fmt.Sprintf("%s must be a value, not a map (no flag starts with %s-)", key.Value, name)
	}
	set := flag.NewFlagSet(name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	if err := f.Apply(set); err != nil {
		return s, fmt.Sprintf("%s: %v", key.Value, err)
	}
	for _, v := range s.values {
		if err := set.Set(name, v); err != nil {
			return s, fmt.Sprintf("%s: %q is not a valid value: %v (see pg2iceberg --help of a command with --%s)", key.Value, v, err, name)
		}
	}
	return s, ""
}

// suggest names the known setting closest to name, if one is close.
func suggest(name string, known map[string]cli.Flag) string {
	best, dist := "", 3
	for k := range known {
		if d := editDistance(name, k); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", strings.ReplaceAll(best, "-", "_"))
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// settableFlags are the flags of app's commands the environment can set,
// by name: those a configuration file can set.
func settableFlags(app *cli.App) map[string]cli.Flag {
	known := map[string]cli.Flag{}
	var add func(cmds []*cli.Command)
	add = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			for _, f := range cmd.Flags {
				if ev, ok := f.(interface{ GetEnvVars() []string }); ok && len(ev.GetEnvVars()) > 0 && f.Names()[0] != flagConfig.Name {
					if _, dup := known[f.Names()[0]]; !dup {
						known[f.Names()[0]] = f
					}
				}
			}
			add(cmd.Subcommands)
		}
	}
	add(app.Commands)
	return known
}

// configPath is the --config of the command line, else of the environment.
func configPath(args []string) string {
	for i, a := range args {
		switch {
		case a == "--config" || a == "-config":
			if i+1 < len(args) {
				return args[i+1]
			}
		case strings.HasPrefix(a, "--config="):
			return strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "-config="):
			return strings.TrimPrefix(a, "-config=")
		}
	}
	return os.Getenv(flagConfig.EnvVars[0])
}

// commandOf is the command args run: their first word that is no flag.
func commandOf(args []string) string {
	for _, a := range args[min(1, len(args)):] {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// applySettings gives the settings of the --config file to the process
// as defaults of the flags' environment variables, after checking the
// whole file: every problem, of the settings and of the rules and tables,
// at once.
func applySettings(app *cli.App, args []string) error {
	path := configPath(args)
	if path == "" || commandOf(args) == "config" {
		return nil // config check reads its file itself
	}
	known := settableFlags(app)
	settings, err := checkConfigFile(path, known)
	if err != nil {
		return err
	}
	for _, s := range settings {
		env := known[s.name].(interface{ GetEnvVars() []string }).GetEnvVars()[0]
		if _, given := os.LookupEnv(env); given {
			continue // the environment wins over the file
		}
		if err := os.Setenv(env, strings.Join(s.values, ",")); err != nil {
			return fmt.Errorf("apply %s:%d: %w", path, s.line, err)
		}
	}
	return nil
}

// checkConfigFile reads the whole configuration file at path, its settings
// and its rules and tables, and reports every problem at once.
func checkConfigFile(path string, known map[string]cli.Flag) ([]setting, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --config: %w", err)
	}
	settings, e := readSettings(path, data, known)
	o, err := mapping.ParseConfig(path, data)
	if err == nil {
		err = checkTableProperties(o)
	}
	if ce, ok := err.(*mapping.ConfigError); ok {
		e.Problems = append(e.Problems, ce.Problems...)
	} else if err != nil {
		return nil, err
	}
	if err := e.Err(); err != nil {
		return nil, err
	}
	return settings, nil
}
