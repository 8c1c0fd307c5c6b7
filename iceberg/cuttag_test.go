package iceberg

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Each flush's commits record the cut every table had reached before it
// (pg2iceberg.cut), and its last commit the flush's own LSN, so the
// newest cut is the last flush's; with ConsistentTag the flush also moves
// each table's tag consistent to its current snapshot and records its own
// LSN, and a table already tagged there gets no commit.
func TestSinkRecordsCut(t *testing.T) {
	for _, tag := range []bool{false, true} {
		t.Run(fmt.Sprintf("tag=%v", tag), func(t *testing.T) {
			ctx := context.Background()
			cat, err := OpenCatalog(ctx, CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
			if err != nil {
				t.Fatal(err)
			}
			defer CloseCatalog(cat)
			s := NewSink(cat, Config{ConsistentTag: tag}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			var rels []*decode.Relation
			for i, name := range []string{"a", "b"} {
				rel := &decode.Relation{ID: uint32(10 + i), Schema: "public", Name: name, Columns: []decode.Column{{Name: "v", TypeOID: 25, TypeName: "text"}}}
				if err := s.AddTable(ctx, rel); err != nil {
					t.Fatal(err)
				}
				rels = append(rels, rel)
			}
			write := func(end decode.LSN, rels ...*decode.Relation) {
				t.Helper()
				s.Begin(1, end-10, time.Now())
				for _, rel := range rels {
					if err := s.Change(&decode.Change{Op: decode.Insert, Rel: rel, After: decode.Tuple{{Kind: decode.Text, Data: []byte("x")}}}); err != nil {
						t.Fatal(err)
					}
				}
				if _, _, err := s.Commit(ctx, end); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			write(110, rels...)
			// The first flush records a cut (before, the served
			// consistent catalog answered 503 until a second one).
			if a, b := loadCutTable(t, cat, "a").Properties()[PropCut], loadCutTable(t, cat, "b").Properties()[PropCut]; max(a, b) != "110" {
				t.Errorf("after the first flush the cuts are a %q, b %q; want one of them 110", a, b)
			}
			write(210, rels[0])
			// The flush's own cut, on its last commit: a's 210. Which of
			// a and b the first flush committed last is the map's order:
			// b has 110 if it went last, else none (nothing was complete
			// before that flush), unless the tag's commit recorded 110.
			wantCut := map[string]string{"a": "210", "b": "110"}
			if b := loadCutTable(t, cat, "b").Properties()[PropCut]; !tag && b == "" {
				wantCut["b"] = "" // b went first in the first flush, a last
			}
			for _, name := range []string{"a", "b"} {
				tbl := loadCutTable(t, cat, name)
				if got := tbl.Properties()[PropCut]; got != wantCut[name] {
					t.Errorf("%s: %s = %q, want %q", name, PropCut, got, wantCut[name])
				}
				var tagged int64
				for n, r := range tbl.Metadata().Refs() {
					if n == TagConsistent {
						tagged = r.SnapshotID
					}
				}
				if want := int64(0); tag {
					want = tbl.CurrentSnapshot().SnapshotID
					if tagged != want {
						t.Errorf("%s: tag %s at %d, want the current snapshot %d", name, TagConsistent, tagged, want)
					}
				} else if tagged != 0 {
					t.Errorf("%s: tag %s at %d without ConsistentTag", name, TagConsistent, tagged)
				}
			}
		})
	}
}

func loadCutTable(t *testing.T, cat catalog.Catalog, name string) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"public", name + ChangelogSuffix})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
