package iceberg

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// A changelog created before the unavailable column existed gains it
// (a new field ID, optional) when the sink opens it, and rows written
// afterwards carry it.
func TestChangelogGainsUnavailable(t *testing.T) {
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")})
	if err != nil {
		t.Fatal(err)
	}
	defer CloseCatalog(cat)
	// A table without a key: the sink keeps its changelog only.
	rel := &decode.Relation{ID: 7, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20, TypeName: "int8"},
		{Name: "v", TypeOID: 25, TypeName: "text"},
	}}
	full, err := ChangelogSchema(rel)
	if err != nil {
		t.Fatal(err)
	}
	var old []icego.NestedField
	for _, f := range full.Fields() {
		if f.Name != colUnavailable {
			old = append(old, f)
		}
	}
	sc := icego.NewSchema(0, old...)
	spec := ChangelogSpec(sc)
	if _, err := ensureTable(ctx, cat, table.Identifier{"public", "t" + ChangelogSuffix}, sc, &spec, nil); err != nil {
		t.Fatal(err)
	}
	s := NewSink(cat, Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.AddTable(ctx, rel); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"public", "t" + ChangelogSuffix})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := tbl.Schema().FindFieldByName(colUnavailable)
	if !ok || f.Required || f.ID <= sc.HighestFieldID() {
		t.Fatalf("changelog schema after AddTable: %s; want an optional %s with a new field ID", tbl.Schema(), colUnavailable)
	}
	text := func(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }
	s.Begin(1, 100, time.Now())
	if err := s.Change(&decode.Change{Op: decode.Insert, Rel: rel, After: decode.Tuple{text("1"), text("one")}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Commit(ctx, 110); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = cat.LoadTable(ctx, table.Identifier{"public", "t" + ChangelogSuffix}); err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields(colOp, colUnavailable)).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 1 || at.Column(1).Data().Chunk(0).NullN() != 1 {
		t.Errorf("changelog read back: %d rows, unavailable %v; want 1 row, unavailable NULL", at.NumRows(), at.Column(1).Data().Chunk(0))
	}
}
