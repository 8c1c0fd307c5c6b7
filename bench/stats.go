package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// tableStats is what one timed run added to one Iceberg table, read from
// the snapshot summaries in the catalog.
type tableStats struct {
	Table                string `json:"table"`
	Snapshots            int    `json:"snapshots"`
	DataFiles            int    `json:"data_files"`
	DeleteFiles          int    `json:"delete_files"`
	AddedRecords         int64  `json:"added_records"`
	AddedPositionDeletes int64  `json:"added_position_deletes"`
	AddedBytes           int64  `json:"added_bytes"`
	Watermark            string `json:"watermark_lsn"`
	// LiveRows is total-records minus total-position-deletes of the
	// current snapshot (mirrors only).
	LiveRows int64 `json:"live_rows"`
}

// warehouseState is a warehouse at one moment: its Parquet files and the
// tables' snapshots.
type warehouseState struct {
	files  map[string]int64              // Parquet path → size
	tables map[string]*table.Table       // by name; nil when not created
	snaps  map[string]map[int64]struct{} // table → snapshot ids
}

var (
	catalogsMu sync.Mutex // guards catalogs
	catalogs   = map[string]catalog.Catalog{}
)

// openCatalog opens the catalog the bridge uses for t, once per process.
func (e *env) openCatalog(ctx context.Context, t bridgeTarget) (catalog.Catalog, error) {
	catalogsMu.Lock()
	defer catalogsMu.Unlock()
	key := t.warehouse + "|" + t.catalog
	if c, ok := catalogs[key]; ok {
		return c, nil
	}
	cfg := iceberg.CatalogConfig{Warehouse: t.warehouse, Catalog: t.catalog}
	if t.name == "s3" {
		cfg.S3Endpoint, cfg.S3Region, cfg.S3PathStyle = e.s3.Endpoint, e.s3.Region, true
	}
	c, err := iceberg.OpenCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	catalogs[key] = c
	return c, nil
}

func (e *env) snapshotWarehouse(ctx context.Context, t bridgeTarget, w *workload) (*warehouseState, error) {
	st := &warehouseState{files: map[string]int64{}, tables: map[string]*table.Table{}, snaps: map[string]map[int64]struct{}{}}
	err := filepath.WalkDir(t.filesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.files[path] = info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", t.filesDir, err)
	}
	cat, err := e.openCatalog(ctx, t)
	if err != nil {
		return nil, err
	}
	schema, name, _ := strings.Cut(w.table, ".")
	mid, cid := iceberg.Identifiers(schema, name)
	for _, ident := range []table.Identifier{mid, cid} {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, fmt.Errorf("load %v from the %s catalog: %w", ident, t.name, err)
		}
		n := strings.Join(ident, ".")
		st.tables[n] = tbl
		ids := map[int64]struct{}{}
		for _, s := range tbl.Metadata().Snapshots() {
			ids[s.SnapshotID] = struct{}{}
		}
		st.snaps[n] = ids
	}
	return st, nil
}

func summaryInt(props map[string]string, key string) int64 {
	n, _ := strconv.ParseInt(props[key], 10, 64)
	return n
}

// diffWarehouse fills r's file and snapshot figures with what the run
// added, and checks each table's watermark against the workload's last
// transaction (lastPre; 0 checks nothing).
func (e *env) diffWarehouse(r *bridgeRun, before, after *warehouseState, lastPre pglogrepl.LSN) {
	for path, size := range after.files {
		if _, ok := before.files[path]; !ok {
			r.ParquetFiles++
			r.ParquetBytes += size
		}
	}
	r.ParquetBytesPerRow = float64(r.ParquetBytes) / float64(r.Rows)
	for name, tbl := range after.tables {
		ts := tableStats{Table: name}
		for _, s := range tbl.Metadata().Snapshots() {
			if _, ok := before.snaps[name][s.SnapshotID]; ok || s.Summary == nil {
				continue
			}
			p := s.Summary.Properties
			ts.Snapshots++
			ts.DataFiles += int(summaryInt(p, "added-data-files"))
			ts.DeleteFiles += int(summaryInt(p, "added-delete-files"))
			ts.AddedRecords += summaryInt(p, "added-records")
			ts.AddedPositionDeletes += summaryInt(p, "added-position-deletes")
			ts.AddedBytes += summaryInt(p, "added-files-size")
		}
		if cur := tbl.CurrentSnapshot(); cur != nil && cur.Summary != nil {
			p := cur.Summary.Properties
			ts.LiveRows = summaryInt(p, "total-records") - summaryInt(p, "total-position-deletes")
		}
		if lsn, _, err := iceberg.Watermark(tbl, ""); err == nil {
			ts.Watermark = lsn.String()
			if lastPre != 0 && lsn <= lastPre {
				logf("warning: %s watermark %s does not cover the workload's last transaction (before %s)", name, lsn, lastPre)
			}
		}
		r.Snapshots += ts.Snapshots
		r.DataFiles += ts.DataFiles
		r.DeleteFiles += ts.DeleteFiles
		r.Tables = append(r.Tables, ts)
	}
	slices.SortFunc(r.Tables, func(a, b tableStats) int { return strings.Compare(a.Table, b.Table) })
}
