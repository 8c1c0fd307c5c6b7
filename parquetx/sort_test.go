package parquetx

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
)

type bufCloser struct{ *bytes.Buffer }

func (bufCloser) Close() error { return nil }

// A Writer with sort keys writes its rows sorted by them (over several
// batches, nulls where the keys say, ties in a later key's order) and
// Order says where each row went.
func TestWriterSorts(t *testing.T) {
	asc := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	var buf bytes.Buffer
	w, err := NewWriterWith(asc, bufCloser{&buf}, "sorted.parquet", Options{Sort: []SortKey{{Column: 0, NullsFirst: true}, {Column: 1, Desc: true}}})
	if err != nil {
		t.Fatal(err)
	}
	const rows = 3*BatchRows + 5
	for i := range rows {
		if i%1000 == 0 {
			w.Builder(0).AppendNull()
		} else {
			w.Builder(0).(*array.Int64Builder).Append(int64((i * 7919) % 500))
		}
		w.Builder(1).(*array.Int32Builder).Append(int32(i))
		if err := w.RowDone(); err != nil {
			t.Fatal(err)
		}
	}
	if !w.Sorted() || w.Bytes() == 0 {
		t.Fatalf("Sorted() = %v, Bytes() = %d before Close, want true and the held rows' bytes", w.Sorted(), w.Bytes())
	}
	if _, _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	order := w.Order()
	if len(order) != rows {
		t.Fatalf("Order() has %d rows, want %d", len(order), rows)
	}
	r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var ns []*int64
	var ids []int32
	err = EachBatch(context.Background(), r, []int{0, 1}, nil, func(rec arrow.RecordBatch) error {
		n, id := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int32)
		for i := range n.Len() {
			var v *int64
			if n.IsValid(i) {
				x := n.Value(i)
				v = &x
			}
			ns, ids = append(ns, v), append(ids, id.Value(i))
		}
		return nil
	})
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if len(ids) != rows {
		t.Fatalf("read %d rows, want %d", len(ids), rows)
	}
	less := func(i, j int) bool { // row i strictly before row j in the order
		switch {
		case ns[i] == nil || ns[j] == nil:
			return ns[i] == nil && ns[j] != nil || ns[i] == nil && ns[j] == nil && ids[i] > ids[j]
		case *ns[i] != *ns[j]:
			return *ns[i] < *ns[j]
		}
		return ids[i] > ids[j]
	}
	for i := 1; i < rows; i++ {
		if !less(i-1, i) {
			t.Fatalf("rows %d and %d out of order: (%v, %d), (%v, %d)", i-1, i, ns[i-1], ids[i-1], ns[i], ids[i])
		}
	}
	moved := Inverse(order)
	for p := range rows {
		if ids[moved[p]] != int32(p) {
			t.Fatalf("row written at %d is at %d, which holds id %d", p, moved[p], ids[moved[p]])
		}
	}
}
