package bridge

import "testing"

// The repair command an error prints keeps the catalog's password out and
// survives a shell.
func TestRepairCommandParts(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://lake:s3cret@db:5432/cat": "postgres://lake@db:5432/cat",
		"postgres://lake@db/cat":             "postgres://lake@db/cat",
		"/var/lib/pg2iceberg/catalog.db":     "/var/lib/pg2iceberg/catalog.db",
	} {
		if got := withoutPassword(in); got != want {
			t.Errorf("withoutPassword(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"./warehouse":   "./warehouse",
		"s3://lake/wh":  "s3://lake/wh",
		"/data/my lake": "'/data/my lake'",
		"/data/it's":    `'/data/it'\''s'`,
		"":              "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
