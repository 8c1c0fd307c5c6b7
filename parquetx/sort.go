package parquetx

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// SortKey is a column a file's rows are sorted by: top-level field Column
// of the file's schema, descending or not, nulls first or last.
type SortKey struct {
	Column     int
	Desc       bool
	NullsFirst bool
}

// SortRecords sorts the rows of recs, of schema asc, by keys (a stable
// sort: rows equal in every key keep their order). It returns the sorted
// rows and order: order[i] is the position among recs' rows of sorted row
// i. recs are left to the caller.
func SortRecords(ctx context.Context, asc *arrow.Schema, recs []arrow.RecordBatch, keys []SortKey) (arrow.Table, []int32, error) {
	tbl := array.NewTableFromRecords(asc, recs)
	defer tbl.Release()
	opts := make(compute.SortOptions, len(keys))
	for i, k := range keys {
		opts[i] = compute.SortKey{ColumnIndex: k.Column, Order: compute.SortOrderAscending, NullPlacement: compute.SortNullsAtEnd}
		if k.Desc {
			opts[i].Order = compute.SortOrderDescending
		}
		if k.NullsFirst {
			opts[i].NullPlacement = compute.SortNullsAtStart
		}
	}
	idx, err := compute.SortIndices(ctx, compute.NewDatumWithoutOwning(tbl), opts)
	if err != nil {
		return nil, nil, fmt.Errorf("sort rows: %w", err)
	}
	defer idx.Release()
	taken, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(tbl), idx)
	if err != nil {
		return nil, nil, fmt.Errorf("sort rows: %w", err)
	}
	sorted := taken.(*compute.TableDatum).Value
	ia := idx.(*compute.ArrayDatum).MakeArray()
	defer ia.Release()
	order := make([]int32, ia.Len())
	for i, v := range ia.(*array.Uint64).Values() {
		order[i] = int32(v)
	}
	return sorted, order, nil
}

// Sortable reports whether rows can be sorted by a column of type t (a
// primitive: not a list, map or struct).
func Sortable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.MAP, arrow.STRUCT:
		return false
	}
	return true
}

// Inverse returns where each row went: the inverse of order (see
// SortRecords), moved[p] the sorted position of row p.
func Inverse(order []int32) []int32 {
	moved := make([]int32, len(order))
	for i, p := range order {
		moved[p] = int32(i)
	}
	return moved
}

// RecordBytes is the memory of rec's buffers.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

// sortOf is opts' sort keys, nil for none.
func sortOf(opts Options) []SortKey {
	if len(opts.Sort) == 0 {
		return nil
	}
	return opts.Sort
}
