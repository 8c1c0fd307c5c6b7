package iceberg

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// nullText marks a NULL in the rows writeFile writes.
const nullText = "\x00"

// writeFile writes n rows of rel's mirror through the bridge's file writer,
// row r holding the text forms row(r) (nullText for NULL), and checks the
// file describes n rows. It returns the file's path.
func writeFile(t *testing.T, rel *decode.Relation, n int, row func(r int) []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.parquet")
	writeDataFile(t, rel, path, n, row)
	return path
}

// writeDataFile is writeFile into path; it returns the file's description.
func writeDataFile(t *testing.T, rel *decode.Relation, path string, n int, row func(r int) []string) icego.DataFile {
	t.Helper()
	sc, err := MirrorSchema(rel)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := newFileWriter(icebergio.LocalFS{}, path, sc, *icego.UnpartitionedSpec, nil, icego.EntryContentData, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := range n {
		for i, v := range row(r) {
			var text []byte
			if v != nullText {
				text = []byte(v)
			}
			if err := mapping.Append(fw.builder(i), text); err != nil {
				t.Fatalf("row %d column %s: %v", r, rel.Columns[i].Name, err)
			}
		}
		if err := fw.pw.RowDone(); err != nil {
			t.Fatal(err)
		}
	}
	df, err := fw.close()
	if err != nil {
		t.Fatal(err)
	}
	if df.Count() != int64(n) {
		t.Errorf("data file has %d rows, want %d", df.Count(), n)
	}
	return df
}

// readFile reads a Parquet file of at most one batch of rows back.
func readFile(t *testing.T, path string) arrow.RecordBatch {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var rec arrow.RecordBatch
	err = parquetx.EachBatch(context.Background(), r, nil, nil, func(b arrow.RecordBatch) error {
		if rec != nil {
			return errors.New("more than one batch")
		}
		b.Retain()
		rec = b
		return nil
	})
	if err != nil || rec == nil {
		t.Fatalf("read %s: %v (a batch: %t)", path, err, rec != nil)
	}
	t.Cleanup(rec.Release)
	return rec
}

// TestWriteBatches writes more rows than a few batches hold, of flat and
// nested columns with NULLs, so that builders are sized for the next batch
// after a full one (see fileWriter.writeBatch), and reads every row back.
func TestWriteBatches(t *testing.T) {
	rows := [][]string{
		{"", "{{1,2},{3,NULL}}", `(Main,"(1.5,2)","{a,b}")`, "happy", `"a"=>"1", "b"=>NULL`, "1 year 2 mons 3 days 04:05:06.789", `{"1 day",NULL}`},
		{"", "{}", "(,,)", "", "", "00:00:00", "{}"},
		{"", nullText, nullText, nullText, nullText, nullText, nullText},
		{"", "{{5}}", `("a much longer street name than the others",,"{x,y,z,w}")`, "sad", `"k"=>"a longer value"`, "-3 days", `{"2 mons"}`},
	}
	const n = 3*parquetx.BatchRows + 5
	rec := readFile(t, writeFile(t, nestedRelation(), n, func(r int) []string {
		row := append([]string(nil), rows[r%len(rows)]...)
		row[0] = strconv.Itoa(r)
		return row
	}))
	for c := 0; c < int(rec.NumCols()); c++ {
		name, arr := rec.Schema().Field(c).Name, rec.Column(c)
		if err := array.ValidateFull(arr); err != nil {
			t.Fatalf("column %s read back invalid: %v", name, err)
		}
		if arr.Len() != n {
			t.Fatalf("column %s has %d values, want %d", name, arr.Len(), n)
		}
		for r := range n {
			want := arr.ValueStr(r % len(rows)) // the first rows hold every distinct value
			if c == 0 {
				want = strconv.Itoa(r)
			}
			if got := arr.ValueStr(r); got != want {
				t.Fatalf("column %s row %d = %s, want %s", name, r, got, want)
			}
		}
	}
}
