package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
)

// Messages name a table as namespace.table, not as a Go slice.
func TestWatermarkNamesTable(t *testing.T) {
	f := newRepairFixture(t)
	rows := repairRows(100)
	defer rows.Release()
	tbl, err := f.versions[3].AppendTable(context.Background(), rows, 10, icego.Properties{PropLSN: "5", PropSource: "1/shop/a"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Watermark(tbl, "1/shop/b")
	if err == nil || !strings.Contains(err.Error(), "table shop.t was written from source") {
		t.Errorf("Watermark from another source: error = %v, want one naming shop.t", err)
	}
}

// A local warehouse is created and written before anything else; the
// probe file does not stay.
func TestCheckWarehouseLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "wh")
	if err := CheckWarehouse(context.Background(), CatalogConfig{Warehouse: dir}, true); err != nil {
		t.Fatalf("CheckWarehouse(%s) = %v", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("warehouse after the check holds %v (%v), want nothing", entries, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckWarehouse(context.Background(), CatalogConfig{Warehouse: filepath.Join(file, "wh")}, true); err == nil || !strings.Contains(err.Error(), "create warehouse directory") {
		t.Errorf("CheckWarehouse under a file: error = %v", err)
	}
}
