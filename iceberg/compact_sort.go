package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// A sorted table's compaction: the kept rows of a group's files are held
// in memory up to the target size, then sorted together and written as
// one file, and only then is it known where each row went.

// heldRows are kept rows a sorted rewrite has not written yet: the
// batches, their memory, and where each row came from (in order).
type heldRows struct {
	recs  []arrow.RecordBatch
	bytes int64
	from  []rowOrigin
}

// rowOrigin is a held row's entry in its old file's moved (rows, a view
// of it as long as the file's row count: the entry is set when the row is
// written).
type rowOrigin struct {
	rows []rewritten
	pos  int64
}

// release drops the held rows.
func (h *heldRows) release() {
	for _, r := range h.recs {
		r.Release()
	}
	h.recs, h.bytes, h.from = nil, 0, h.from[:0]
}

// hold is write for a sorted table: rec's rows that deleted does not hold
// are held (their entries in moved set by writeHeld), and written once
// they reach the target size.
func (o *rewriteOut) hold(rec arrow.RecordBatch, deleted map[int64]bool, moved *[]rewritten) error {
	if err := o.schema(); err != nil {
		return err
	}
	base := int64(len(*moved))
	view := (*moved)[:cap(*moved)]
	var keep [][2]int64 // runs of kept rows [from, to)
	n := int64(0)
	for i := range rec.NumRows() {
		// A kept row's place is set when it is written; until then it
		// reads as dropped, which Remap refuses rather than follows.
		*moved = append(*moved, rewritten{file: -1})
		if deleted[base+i] {
			continue
		}
		o.held.from = append(o.held.from, rowOrigin{rows: view, pos: base + i})
		n++
		if k := len(keep); k > 0 && keep[k-1][1] == i {
			keep[k-1][1] = i + 1
		} else {
			keep = append(keep, [2]int64{i, i + 1})
		}
	}
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		col, err := keptRows(rec.Column(c), keep)
		if err != nil {
			return err
		}
		cols[c] = col
	}
	kept := array.NewRecordBatch(o.asc, cols, n)
	o.held.recs = append(o.held.recs, kept)
	o.held.bytes += parquetx.RecordBytes(kept)
	if o.held.bytes >= o.target {
		return o.writeHeld()
	}
	return nil
}

// writeHeld sorts the held rows, writes them as one file and records
// where each went.
func (o *rewriteOut) writeHeld() error {
	if len(o.held.recs) == 0 {
		return nil
	}
	sorted, order, err := parquetx.SortRecords(context.Background(), o.asc, o.held.recs, o.sort)
	from := o.held.from
	o.held.release()
	if err != nil {
		return fmt.Errorf("compact %s: %w", o.dir, err)
	}
	defer sorted.Release()
	if len(order) != len(from) {
		return fmt.Errorf("compact %s: sorted %d rows of %d held", o.dir, len(order), len(from))
	}
	if err := o.open(); err != nil {
		return err
	}
	file := o.first + int32(len(o.done))
	for i, p := range order {
		f := from[p]
		f.rows[f.pos] = rewritten{file: file, pos: int64(i)}
	}
	tr := array.NewTableReader(sorted, parquetx.BatchRows)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		if err := o.w.NewRowGroup(); err != nil {
			return err
		}
		for c := range int(rec.NumCols()) {
			if err := o.w.WriteColumn(c, rec.Column(c)); err != nil {
				return err
			}
		}
	}
	if err := tr.Err(); err != nil {
		return fmt.Errorf("compact %s: %w", o.dir, err)
	}
	o.rows = int64(len(order))
	return o.roll()
}
