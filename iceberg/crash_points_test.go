package iceberg

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every name in CrashPoints is reached somewhere in the source (a call
// crashPoint("<name>") in iceberg/ or iceberg/keyindex/), and every such
// call is in the list: a driver picking a point nobody calls would pass
// without crashing.
func TestCrashPointsCalled(t *testing.T) {
	var src strings.Builder
	for _, pattern := range []string{"*.go", "keyindex/*.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
	}
	text := src.String()
	for _, p := range CrashPoints {
		if !strings.Contains(text, `crashPoint("`+p+`")`) {
			t.Errorf("crash point %q is in CrashPoints but no crashPoint(%q) call reaches it", p, p)
		}
	}
	for _, part := range strings.Split(text, `crashPoint("`)[1:] {
		name, _, _ := strings.Cut(part, `"`)
		if !slices.Contains(CrashPoints, name) {
			t.Errorf("crashPoint(%q) is called but missing from CrashPoints", name)
		}
	}
}
