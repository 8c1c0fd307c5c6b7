package parquetx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestBufferPool checks what Arrow expects of an allocator: zeroed,
// aligned buffers of the size asked for, contents kept on a reallocation,
// whatever the buffers that came back held.
func TestBufferPool(t *testing.T) {
	p := &bufferPool{}
	check := func(b []byte, size, from int) {
		t.Helper()
		if len(b) != size {
			t.Fatalf("len %d, want %d", len(b), size)
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%poolAlign != 0 && size > 0 {
			t.Fatalf("buffer of %d bytes not aligned to %d", size, poolAlign)
		}
		for i := from; i < size; i++ {
			if b[i] != 0 {
				t.Fatalf("byte %d of %d is %d, want 0", i, size, b[i])
			}
		}
	}
	dirty := func(b []byte) []byte {
		b = b[:cap(b)]
		for i := range b {
			b[i] = 0xA5
		}
		return b
	}
	for _, size := range []int{0, 1, 100, 4095, 4096, 4097, 5000, 1 << 20, 3<<20 + 7, 1<<poolMaxClass + 1} {
		for range 3 { // a fresh buffer, then (likely) pooled ones
			b := p.Allocate(size)
			check(b, size, 0)
			p.Free(dirty(b))
		}
	}

	// Growing within the capacity of a buffer that held other data.
	b := dirty(p.Allocate(5000))[:100]
	b = p.Reallocate(7000, b)
	for i := range 100 {
		if b[i] != 0xA5 {
			t.Fatalf("byte %d lost on reallocation", i)
		}
	}
	check(b, 7000, 100)
	// Growing past it: contents move, the rest is zero.
	b = p.Reallocate(20000, b)
	if b[99] != 0xA5 || b[100] != 0 {
		t.Fatal("contents not moved on reallocation")
	}
	check(b, 20000, 100)
	// Shrinking keeps the buffer.
	if s := p.Reallocate(10, b); &s[0] != &b[0] || len(s) != 10 {
		t.Fatal("shrinking moved the buffer")
	}
	// Buffers not of a pooled size are left alone.
	p.Free(make([]byte, 3000))
	p.Free(make([]byte, 6000))
	p.Free(nil)
}

// TestBufferPoolFiles writes files of many batches through the pooled
// allocator from several goroutines at once, with strings of lengths that
// change from batch to batch (so buffers of one size serve another), and
// reads every value back. Freed buffers are poisoned: one still used after
// Free would show as a wrong value.
func TestBufferPoolFiles(t *testing.T) {
	pool := dataAlloc.(*bufferPool)
	pool.poison = true
	t.Cleanup(func() { pool.poison = false })
	asc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	value := func(w, r int) string {
		return fmt.Sprintf("%d:%d:", w, r) + strings.Repeat("x", (r/BatchRows*37+r)%300)
	}
	const n = 6*BatchRows + 11
	for w := range 4 {
		t.Run(strconv.Itoa(w), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "data.parquet")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			pw, err := NewWriter(asc, f, path)
			if err != nil {
				t.Fatal(err)
			}
			for r := range n {
				pw.Builder(0).(*array.Int64Builder).Append(int64(r))
				if r%9 == 0 {
					pw.Builder(1).AppendNull()
				} else {
					pw.Builder(1).(*array.StringBuilder).Append(value(w, r))
				}
				if r%4 == 0 {
					pw.Builder(2).AppendNull()
				} else {
					pw.Builder(2).(*array.Int32Builder).Append(int32(r * w))
				}
				if err := pw.RowDone(); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := pw.Close(); err != nil {
				t.Fatal(err)
			}
			rec := readFile(t, path)
			if rec.NumRows() != n {
				t.Fatalf("%d rows, want %d", rec.NumRows(), n)
			}
			id, s, num := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String), rec.Column(2).(*array.Int32)
			for r := range n {
				if id.Value(r) != int64(r) {
					t.Fatalf("row %d: id %d", r, id.Value(r))
				}
				if got := s.IsNull(r); got != (r%9 == 0) {
					t.Fatalf("row %d: s null %t", r, got)
				} else if !got && s.Value(r) != value(w, r) {
					t.Fatalf("row %d: s = %q, want %q", r, s.Value(r), value(w, r))
				}
				if got := num.IsNull(r); got != (r%4 == 0) {
					t.Fatalf("row %d: n null %t", r, got)
				} else if !got && num.Value(r) != int32(r*w) {
					t.Fatalf("row %d: n = %d, want %d", r, num.Value(r), r*w)
				}
			}
		})
	}
}

// readFile reads a Parquet file of one row group back.
func readFile(t *testing.T, path string) arrow.RecordBatch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, tbl.NumRows())
	defer tr.Release()
	if !tr.Next() {
		t.Fatalf("read %s: no rows", path)
	}
	rec := tr.RecordBatch()
	rec.Retain()
	t.Cleanup(rec.Release)
	return rec
}
