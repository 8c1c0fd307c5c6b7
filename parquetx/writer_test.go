package parquetx

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestWriterReservesData checks that after a full batch the string
// builders, top-level and inside a struct (the changelog's images), hold
// room for as many value bytes as that batch had, so the next batch's
// values do not grow their buffers by doubling; and that the rows read
// back as written.
func TestWriterReservesData(t *testing.T) {
	img := arrow.StructOf(
		arrow.Field{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	)
	asc := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "img", Type: img, Nullable: true},
	}, nil)
	path := filepath.Join(t.TempDir(), "data.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := NewWriter(asc, f, path)
	if err != nil {
		t.Fatal(err)
	}
	top := pw.Builder(0).(*array.StringBuilder)
	st := pw.Builder(1).(*array.StructBuilder)
	nested := st.FieldBuilder(0).(*array.StringBuilder)
	value := func(r int) string { return fmt.Sprintf("value %08d", r) }
	const n = BatchRows + 100
	batchBytes := 0
	for r := range n {
		top.Append(value(r))
		if r%7 == 0 {
			st.AppendNull()
		} else {
			st.Append(true)
			nested.Append(value(r))
			st.FieldBuilder(1).(*array.Int32Builder).Append(int32(r))
			if r < BatchRows {
				batchBytes += len(value(r))
			}
		}
		if err := pw.RowDone(); err != nil {
			t.Fatal(err)
		}
		if r == BatchRows-1 {
			if got, want := top.DataCap(), BatchRows*len(value(0)); got < want {
				t.Errorf("top-level string builder: room for %d value bytes after a full batch, want %d", got, want)
			}
			if got := nested.DataCap(); got < batchBytes {
				t.Errorf("string builder in a struct: room for %d value bytes after a full batch, want %d", got, batchBytes)
			}
		}
	}
	if _, _, err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	rec := readFile(t, path)
	if rec.NumRows() != n {
		t.Fatalf("%d rows read back, want %d", rec.NumRows(), n)
	}
	ss := rec.Column(0).(*array.String)
	imgs := rec.Column(1).(*array.Struct)
	ts := imgs.Field(0).(*array.String)
	for r := range n {
		if ss.Value(r) != value(r) {
			t.Fatalf("row %d: s = %q, want %q", r, ss.Value(r), value(r))
		}
		if null := imgs.IsNull(r); null != (r%7 == 0) {
			t.Fatalf("row %d: img null = %v", r, null)
		}
		if r%7 != 0 && ts.Value(r) != value(r) {
			t.Fatalf("row %d: img.t = %q, want %q", r, ts.Value(r), value(r))
		}
	}
}
