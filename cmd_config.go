package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/pg2iceberg/pg2iceberg/connstr"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "check a configuration file",
		Subcommands: []*cli.Command{{
			Name:      "check",
			Usage:     "check every key of a configuration file and print the configuration run would use, secrets redacted",
			ArgsUsage: "FILE",
			Action:    configCheckCmd,
		}},
	}
}

// configCheckCmd checks the file's settings, rules and tables and prints
// what run would use: each of its settings with where it comes from (the
// environment over the file over the default), then the rules and tables.
func configCheckCmd(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("config check takes one argument, the file, e.g. pg2iceberg config check pg2iceberg.yaml")
	}
	path := c.Args().First()
	app := c.App
	settings, err := checkConfigFile(path, settableFlags(app))
	if err != nil {
		return err
	}
	w := app.Writer
	fmt.Fprintf(w, "# %s is valid. The configuration pg2iceberg run would use with it\n", path)
	fmt.Fprintf(w, "# (flags on the command line override everything here):\n")
	printSettings(w, runFlags(app), settings)
	return printTables(w, path)
}

// runFlags are the settable flags of the run command, in its order.
func runFlags(app *cli.App) []cli.Flag {
	known := settableFlags(app)
	var out []cli.Flag
	for _, cmd := range app.Commands {
		if cmd.Name != "run" {
			continue
		}
		for _, f := range cmd.Flags {
			if known[f.Names()[0]] != nil {
				out = append(out, f)
			}
		}
	}
	return out
}

// printSettings prints each of run's settings and then the file's
// settings run has not: value and origin.
func printSettings(w io.Writer, flags []cli.Flag, settings []setting) {
	fromFile := map[string]setting{}
	for _, s := range settings {
		fromFile[s.name] = s
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()[0])
	}
	for _, s := range settings {
		if !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
	}
	byName := map[string]cli.Flag{}
	for _, f := range flags {
		byName[f.Names()[0]] = f
	}
	for _, name := range names {
		value, origin := effective(byName[name], fromFile[name])
		_, text := byName[name].(*cli.StringFlag)
		if text || byName[name] == nil {
			value = redactSetting(name, value)
		}
		if name == flagRESTHeader.Name {
			value = redactHeaders(value)
		}
		fmt.Fprintf(w, "%s: %s  # %s\n", strings.ReplaceAll(name, "-", "_"), value, origin)
	}
}

// effective is a setting's value for run and where it comes from.
func effective(f cli.Flag, s setting) (value, origin string) {
	if f != nil {
		env := f.(interface{ GetEnvVars() []string }).GetEnvVars()[0]
		if v, ok := os.LookupEnv(env); ok {
			return quote(v), "from the environment (" + env + ")"
		}
	}
	if s.name != "" {
		v := strings.Join(s.values, ",")
		if len(s.values) > 1 {
			v = "[" + v + "]"
		}
		return quote(v), fmt.Sprintf("from the file, line %d", s.line)
	}
	if f == nil {
		return "", "not a flag of run"
	}
	def := ""
	if g, ok := f.(interface{ GetDefaultText() string }); ok {
		def = g.GetDefaultText()
	}
	if def == "" {
		if g, ok := f.(interface{ GetValue() string }); ok {
			def = g.GetValue()
		}
	}
	return quote(strings.Trim(def, `"`)), "default"
}

func quote(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// redactSetting hides a text setting's secrets: a token or secret whole,
// the password of a URL or connection string.
func redactSetting(name, value string) string {
	for _, word := range []string{"token", "secret", "password", "credential"} {
		if strings.Contains(name, word) && !strings.HasSuffix(name, "-file") && value != `""` {
			return "<redacted>"
		}
	}
	return connstr.Redact(value)
}

// redactHeaders hides the credentials in a list of header lines as
// effective prints it: "[A: 1,B: 2]" or one line. A part without a colon
// continues the line before it (a value holding a comma) and shares its
// fate.
func redactHeaders(value string) string {
	list := strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]")
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(value, "["), "]"), ",")
	hidden := false
	var out []string
	for _, p := range parts {
		if !strings.Contains(p, ":") {
			if !hidden {
				out = append(out, p)
			}
			continue
		}
		r := iceberg.RedactHeader(p)
		hidden = r != p
		out = append(out, r)
	}
	text := strings.Join(out, ",")
	if list {
		text = "[" + text + "]"
	}
	return text
}

// printTables prints the file's rules and tables as it gives them.
func printTables(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "rules" && k != "tables" {
			continue
		}
		part := &yaml.Node{Kind: yaml.MappingNode, Content: root.Content[i : i+2]}
		out, err := yaml.Marshal(part)
		if err != nil {
			return fmt.Errorf("print %s: %w", root.Content[i].Value, err)
		}
		fmt.Fprint(w, string(out))
	}
	return nil
}
