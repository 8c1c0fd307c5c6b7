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
// (pg2iceberg.cut); with ConsistentTag the flush also moves each table's
// tag consistent to its current snapshot and records its own LSN, and a
// table already tagged there gets no commit.
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
			write(210, rels[0])
			wantCut := map[string]string{"a": "110", "b": ""} // the cut before each table's last flush
			if tag {
				wantCut = map[string]string{"a": "210", "b": "110"} // the flush's own, with the tag's commit
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
