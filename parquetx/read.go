package parquetx

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ColumnsByFieldID finds the leaf columns with the given Iceberg field IDs.
func ColumnsByFieldID(r *file.Reader, ids []int) ([]int, error) {
	sc := r.MetaData().Schema
	out := make([]int, len(ids))
	for j, id := range ids {
		out[j] = -1
		for c := 0; c < sc.NumColumns(); c++ {
			if int(sc.Column(c).SchemaNode().FieldID()) == id {
				out[j] = c
				break
			}
		}
		if out[j] < 0 {
			return nil, fmt.Errorf("no column with field id %d", id)
		}
	}
	return out, nil
}

// PresentFields returns the fields of ids that the file has a leaf column
// of: a column added to a table since the file was written is NULL in all
// its rows.
func PresentFields(r *file.Reader, ids []int) []int {
	sc := r.MetaData().Schema
	var out []int
	for _, id := range ids {
		for c := 0; c < sc.NumColumns(); c++ {
			if int(sc.Column(c).SchemaNode().FieldID()) == id {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// EachBatch reads the given leaf columns (nil: all) of the given row
// groups (nil: all) in order, in batches of up to 64k rows.
func EachBatch(ctx context.Context, r *file.Reader, cols, rowGroups []int, fn func(arrow.RecordBatch) error) error {
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, cols, rowGroups)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return err
		}
	}
	return rr.Err()
}
