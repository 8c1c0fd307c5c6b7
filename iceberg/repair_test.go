package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// repairFixture is a SQLite catalog with shop.t created and appended to
// three times (metadata versions 0 to 3), and shop.other.
type repairFixture struct {
	cfg      CatalogConfig
	cat      catalog.Catalog
	versions []*table.Table // versions[i] is the table at metadata version i
	other    *table.Table
}

func newRepairFixture(t *testing.T) repairFixture {
	t.Helper()
	ctx := context.Background()
	cfg := CatalogConfig{Warehouse: filepath.Join(t.TempDir(), "wh")}
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := icego.NewSchema(0, icego.NestedField{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true})
	f := repairFixture{cfg: cfg, cat: cat}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"shop", "t"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	f.versions = append(f.versions, tbl)
	for i := int64(0); i < 3; i++ {
		rows := repairRows(i*10, i*10+1)
		tbl, err = tbl.AppendTable(ctx, rows, 10, nil)
		rows.Release()
		if err != nil {
			t.Fatal(err)
		}
		f.versions = append(f.versions, tbl)
	}
	if f.other, err = cat.CreateTable(ctx, table.Identifier{"shop", "other"}, sc); err != nil {
		t.Fatal(err)
	}
	return f
}

func repairRows(v ...int64) arrow.Table {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(v, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// point sets the catalog entry of shop.t to loc, behind the catalog's back.
func (f repairFixture) point(t *testing.T, loc string) {
	t.Helper()
	db, dialect, err := openCatalogDB(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	row := catalogRow{db: db, dialect: dialect, catalog: "pg2iceberg", namespace: "shop", table: "t"}
	if err := row.set(context.Background(), loc, ""); err != nil {
		t.Fatal(err)
	}
}

func trimFileScheme(loc string) string { return strings.TrimPrefix(loc, "file://") }

func TestRepair(t *testing.T) {
	ident := table.Identifier{"shop", "t"}
	cases := []struct {
		name    string
		damage  func(t *testing.T, f repairFixture)
		want    int  // metadata version the entry must point at after repair
		changed bool // whether Repair changes the entry
		skipped int  // invalid newer files reported
	}{
		{"in agreement", func(*testing.T, repairFixture) {}, 3, false, 0},
		{"entry behind the files", func(t *testing.T, f repairFixture) { f.point(t, f.versions[1].MetadataLocation()) }, 3, true, 0},
		{"entry points at a missing file", func(t *testing.T, f repairFixture) {
			f.point(t, strings.Replace(f.versions[3].MetadataLocation(), "00003-", "00007-", 1))
		}, 3, true, 0},
		{"entry lost", func(t *testing.T, f repairFixture) {
			if err := f.cat.DropTable(context.Background(), ident); err != nil {
				t.Fatal(err)
			}
		}, 3, true, 0},
		{"newest file corrupt", func(t *testing.T, f repairFixture) {
			bad := filepath.Join(filepath.Dir(trimFileScheme(f.versions[3].MetadataLocation())), "00004-00000000-0000-0000-0000-000000000000.metadata.json")
			if err := os.WriteFile(bad, []byte(`{"format-version": 2, "trunc`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 3, false, 1},
		{"newest file of another table", func(t *testing.T, f repairFixture) {
			data, err := os.ReadFile(trimFileScheme(f.other.MetadataLocation()))
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(filepath.Dir(trimFileScheme(f.versions[3].MetadataLocation())), "00009-00000000-0000-0000-0000-000000000000.metadata.json")
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 3, false, 1},
		{"manifest list of the newest snapshot lost", func(t *testing.T, f repairFixture) {
			if err := os.Remove(trimFileScheme(f.versions[3].CurrentSnapshot().ManifestList)); err != nil {
				t.Fatal(err)
			}
		}, 2, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newRepairFixture(t)
			tc.damage(t, f)
			changed := tc.changed

			dry, err := Repair(ctx, f.cfg, ident, "", true, false)
			if err != nil {
				t.Fatalf("Repair(dry run) = %v", err)
			}
			want := f.versions[tc.want].MetadataLocation()
			if dry.Newest != want || dry.Changed != changed || len(dry.Skipped) != tc.skipped {
				t.Errorf("Repair(dry run) = newest %s, changed %t, skipped %v; want %s, %t, %d skipped", dry.Newest, dry.Changed, dry.Skipped, want, changed, tc.skipped)
			}
			if after, _ := (catalogRowFor(t, f)).metadataLocation(ctx); after != dry.Was {
				t.Errorf("dry run changed the entry from %q to %q", dry.Was, after)
			}

			res, err := Repair(ctx, f.cfg, ident, "", false, false)
			if err != nil {
				t.Fatalf("Repair = %v", err)
			}
			if res.Newest != want || res.Changed != changed {
				t.Errorf("Repair = newest %s, changed %t; want %s, %t", res.Newest, res.Changed, want, changed)
			}
			tbl, err := f.cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatalf("load after repair: %v", err)
			}
			if tbl.MetadataLocation() != want {
				t.Errorf("after repair the catalog points at %s, want %s", tbl.MetadataLocation(), want)
			}
			if got, wantSnap := tbl.CurrentSnapshot().SnapshotID, f.versions[tc.want].CurrentSnapshot().SnapshotID; got != wantSnap {
				t.Errorf("after repair the current snapshot is %d, want %d", got, wantSnap)
			}
			again, err := Repair(ctx, f.cfg, ident, "", false, false)
			if err != nil || again.Changed {
				t.Errorf("second Repair = changed %t, %v; want no change", again.Changed, err)
			}
		})
	}
}

func catalogRowFor(t *testing.T, f repairFixture) catalogRow {
	t.Helper()
	db, dialect, err := openCatalogDB(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return catalogRow{db: db, dialect: dialect, catalog: "pg2iceberg", namespace: "shop", table: "t"}
}

func TestRepairErrors(t *testing.T) {
	ctx := context.Background()
	f := newRepairFixture(t)
	cases := []struct {
		name  string
		cfg   CatalogConfig
		ident table.Identifier
		want  string
	}{
		{"no namespace", f.cfg, table.Identifier{"t"}, "namespace.table"},
		{"rest catalog", CatalogConfig{Warehouse: f.cfg.Warehouse, Catalog: "http://127.0.0.1:1"}, table.Identifier{"shop", "t"}, "SQL catalogs"},
		{"unknown table", f.cfg, table.Identifier{"shop", "nope"}, "no metadata files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Repair(ctx, tc.cfg, tc.ident, "", false, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Repair(%v) = %v, want an error containing %q", tc.ident, err, tc.want)
			}
		})
	}
}

// Commits on top of an older catalog entry fork the table's history: the
// newest file by number is then on the other branch, and repair keeps the
// catalog's entry unless forced.
func TestRepairForked(t *testing.T) {
	ctx := context.Background()
	ident := table.Identifier{"shop", "t"}
	f := newRepairFixture(t)
	f.point(t, f.versions[1].MetadataLocation())
	old, err := f.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	rows := repairRows(99)
	fork, err := old.AppendTable(ctx, rows, 10, nil)
	rows.Release()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Repair(ctx, f.cfg, ident, "", true, false)
	if err == nil || !strings.Contains(err.Error(), "forked") {
		t.Fatalf("Repair of a forked table = %v, want an error saying the history forked", err)
	}
	if tbl, _ := f.cat.LoadTable(ctx, ident); tbl.MetadataLocation() != fork.MetadataLocation() {
		t.Errorf("after the refused repair the catalog points at %s, want %s (the fork's)", tbl.MetadataLocation(), fork.MetadataLocation())
	}
	res, err := Repair(ctx, f.cfg, ident, "", false, true)
	if err != nil || res.Newest != f.versions[3].MetadataLocation() {
		t.Errorf("Repair(force) = %s, %v; want %s", res.Newest, err, f.versions[3].MetadataLocation())
	}
}
