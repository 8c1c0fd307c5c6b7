package history

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ReadConfig is what `pg2iceberg read` reads.
type ReadConfig struct {
	At      Point
	Where   *Filter  // nil: every row
	Columns []string // nil: every column of the snapshot's schema
	Limit   int64    // 0: no limit
	Format  string   // see Formats
}

// Read writes the rows of tbl at cfg.At to w, scanned with iceberg-go
// (position deletes applied, the filter pushed into the scan). It returns
// the snapshot read.
func Read(ctx context.Context, tbl *table.Table, cfg ReadConfig, w io.Writer) (*table.Snapshot, error) {
	snap, err := Resolve(tbl, cfg.At)
	if err != nil {
		return nil, err
	}
	schema := snapshotSchema(tbl, snap)
	opts := []table.ScanOption{table.WithSnapshotID(snap.SnapshotID)}
	if cfg.Where != nil {
		if err := cfg.Where.Bind(schema); err != nil {
			return nil, err
		}
		opts = append(opts, table.WithRowFilter(cfg.Where.Expr))
	}
	if len(cfg.Columns) > 0 {
		for _, c := range cfg.Columns {
			if _, ok := schema.FindFieldByName(c); !ok {
				return nil, fmt.Errorf("--columns: no column %q in %s at snapshot %d (the columns: %s)", c, strings.Join(tbl.Identifier(), "."), snap.SnapshotID, strings.Join(fieldNames(schema), ", "))
			}
		}
		opts = append(opts, table.WithSelectedFields(cfg.Columns...))
	}
	if cfg.Limit > 0 {
		opts = append(opts, table.WithLimit(cfg.Limit))
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	sc, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %s at snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
	}
	cols := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = f.Name
	}
	order := columnOrder(cols, cfg.Columns)
	out, err := NewOutput(w, cfg.Format, pick(cols, order))
	if err != nil {
		return nil, err
	}
	for rec, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("scan %s at snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			cells := make([]Cell, len(order))
			for j, c := range order {
				cells[j] = cellOf(rec.Column(c), i)
			}
			if err := out.Row(cells); err != nil {
				rec.Release()
				return nil, err
			}
		}
		rec.Release()
	}
	return snap, out.Close()
}

// columnOrder is the positions in cols of want, in want's order (the
// scan returns selected fields in schema order); all of cols without want.
func columnOrder(cols, want []string) []int {
	var out []int
	if len(want) == 0 {
		for i := range cols {
			out = append(out, i)
		}
		return out
	}
	for _, w := range want {
		if i := slices.Index(cols, w); i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

func pick(cols []string, order []int) []string {
	out := make([]string, len(order))
	for i, c := range order {
		out[i] = cols[c]
	}
	return out
}

// snapshotSchema is the schema snap was written with (the current one
// when the snapshot does not say).
func snapshotSchema(tbl *table.Table, snap *table.Snapshot) *icego.Schema {
	if snap.SchemaID != nil {
		for _, s := range tbl.Metadata().Schemas() {
			if s.ID == *snap.SchemaID {
				return s
			}
		}
	}
	return tbl.Schema()
}
