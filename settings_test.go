package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a configuration file into a test directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pg2iceberg.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every problem of a file, of its settings and of its tables, is reported
// at once, each at its line and saying what would be valid.
func TestConfigFileEveryProblemAtOnce(t *testing.T) {
	path := writeConfig(t, `source: postgres://app@localhost/shop
flush_interval: often
flsh_rows: 10
s3:
  endpoint: http://127.0.0.1:7070
  colour: blue
tables:
  - table: public.orders
    bogus: 1
`)
	_, err := checkConfigFile(path, settableFlags(newApp()))
	if err == nil {
		t.Fatal("checkConfigFile accepted a file with four problems")
	}
	for _, want := range []string{
		`:2: flush_interval: "often" is not a valid value`,
		`:3: unknown key "flsh_rows"`, `did you mean flush_rows?`,
		`:6: unknown key "colour"`,
		`:9: tables entry 1: unknown key "bogus"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d problems reported, want 4:\n%v", n, err)
	}
}

// The file's settings become the defaults of the flags' environment
// variables: the environment wins over the file, and a required flag the
// file gives counts as given.
func TestConfigFileSettingsPrecedence(t *testing.T) {
	path := writeConfig(t, "source: postgres://file@localhost/shop\npublication: from_file\nflush:\n  interval: 7s\n")
	t.Setenv("PG2ICEBERG_PUBLICATION", "from_env")
	for _, name := range []string{"PG2ICEBERG_SOURCE", "PG2ICEBERG_FLUSH_INTERVAL"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	if err := applySettings(newApp(), []string{"pg2iceberg", "run", "--config", path}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"PG2ICEBERG_SOURCE":         "postgres://file@localhost/shop",
		"PG2ICEBERG_PUBLICATION":    "from_env",
		"PG2ICEBERG_FLUSH_INTERVAL": "7s",
	} {
		if got := os.Getenv(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// The example configuration in docs/ is valid.
func TestExampleConfigIsValid(t *testing.T) {
	if _, err := checkConfigFile("docs/pg2iceberg.example.yaml", settableFlags(newApp())); err != nil {
		t.Fatal(err)
	}
}

// A command that only groups others (tag, branch, config) prints its help
// when run alone instead of failing.
func TestGroupCommandAlone(t *testing.T) {
	for _, cmd := range []string{"tag", "branch", "config"} {
		if err := newApp().Run([]string{"pg2iceberg", cmd}); err != nil {
			t.Errorf("pg2iceberg %s: %v", cmd, err)
		}
	}
}

// config check prints each setting with its origin and no secret: a
// password in a URL, a token.
func TestConfigCheckRedacts(t *testing.T) {
	path := writeConfig(t, "source: postgres://app:hunter2@localhost/shop\npublication: shop_pub\ncatalog_token: s3cr3t-token\n"+
		"rest_header: ['X-Api-Key: k3y-v4lue', 'X-Iceberg-Access-Delegation: vended-credentials']\n")
	t.Setenv("PG2ICEBERG_FLUSH_ROWS", "5000")
	app := newApp()
	settings, err := checkConfigFile(path, settableFlags(app))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printSettings(&out, runFlags(app), settings)
	text := out.String()
	for _, secret := range []string{"hunter2", "s3cr3t", "k3y-v4lue"} {
		if strings.Contains(text, secret) {
			t.Errorf("config check printed the secret %q:\n%s", secret, text)
		}
	}
	for _, want := range []string{
		"source: postgres://app:xxxxx@localhost/shop  # from the file, line 1",
		"catalog_token: <redacted>  # from the file, line 3",
		"flush_rows: 5000  # from the environment (PG2ICEBERG_FLUSH_ROWS)",
		"flush_interval: 10s  # default",
		"rest_header: [X-Api-Key: <redacted>,X-Iceberg-Access-Delegation: vended-credentials]  # from the file, line 4",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config check lacks %q:\n%s", want, text)
		}
	}
}

// pg2iceberg config check FILE: a valid file prints the configuration with
// the file's rules and tables; a bad one is an error naming its line.
func TestConfigCheckCommand(t *testing.T) {
	good := writeConfig(t, "publication: shop_pub\ntables:\n  - table: public.orders\n    drop_table: keep\n")
	app := newApp()
	var out strings.Builder
	app.Writer = &out
	if err := app.Run([]string{"pg2iceberg", "config", "check", good}); err != nil {
		t.Fatalf("config check of a valid file: %v", err)
	}
	for _, want := range []string{"is valid", "publication: shop_pub  # from the file, line 1", "- table: public.orders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("config check output lacks %q:\n%s", want, out.String())
		}
	}
	bad := writeConfig(t, "publication: shop_pub\nflush_rows: many\n")
	if err := newApp().Run([]string{"pg2iceberg", "config", "check", bad}); err == nil || !strings.Contains(err.Error(), ":2: flush_rows") {
		t.Errorf("config check of a bad file = %v, want the problem at line 2", err)
	}
}
