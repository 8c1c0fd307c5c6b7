package decode_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoStage: decode is the start of the flow replication → decode
// → mapping/evolution → iceberg, so no file of it (tests aside) imports a
// package of the bridge; mapping imports decode only, evolution mapping
// only.
func TestImportsNoStage(t *testing.T) {
	for dir, allowed := range map[string][]string{".": nil, "../mapping": {"decode"}, "../evolution": {"mapping"}} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("glob %s: %v, %d files", dir, err, len(files))
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				pkg, ours := strings.CutPrefix(path, "github.com/pg2iceberg/pg2iceberg/")
				if ours && !slices.Contains(allowed, pkg) {
					t.Errorf("%s imports %s: a package earlier in the flow imports a later one", f, path)
				}
			}
		}
	}
}
