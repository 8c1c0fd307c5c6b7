package mapping_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/type-mapping.md")

const (
	docPath  = "../docs/type-mapping.md"
	docBegin = "<!-- BEGIN GENERATED: mapping.Rules -->\n"
	docEnd   = "<!-- END GENERATED: mapping.Rules -->\n"
)

// rulesTable renders mapping.Rules as the doc's markdown table.
func rulesTable() string {
	var sb strings.Builder
	sb.WriteString("| PostgreSQL | Iceberg | Notes |\n|---|---|---|\n")
	for _, r := range mapping.Rules() {
		sb.WriteString("| " + r.Postgres + " | " + r.Iceberg + " | " + r.Notes + " |\n")
	}
	return sb.String()
}

// TestDocTypeTable keeps docs/type-mapping.md's table of types equal to
// the rule table For uses. Run with -update to rewrite it.
func TestDocTypeTable(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", docPath, strings.TrimSpace(docBegin), strings.TrimSpace(docEnd))
	}
	got, want := doc[i+len(docBegin):j], rulesTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(doc[:i+len(docBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the table in %s", docPath)
		return
	}
	t.Errorf("the table in %s differs from mapping.Rules; run go test ./mapping/ -run TestDocTypeTable -update\ngot:\n%s\nwant:\n%s", docPath, got, want)
}
