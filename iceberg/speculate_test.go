package iceberg

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// keyValueChangelog is a table t (id int8 key, v text) and its changelog
// schema.
func keyValueChangelog(t *testing.T) (*decode.Relation, *icego.Schema) {
	t.Helper()
	rel := &decode.Relation{ID: 1, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20, TypeName: "int8", Key: true, NotNull: true},
		{Name: "v", TypeOID: 25, TypeName: "text"},
	}}
	sc, err := ChangelogSchema(rel)
	if err != nil {
		t.Fatal(err)
	}
	return rel, sc
}

// A changelog file written ahead of its commit gets the commit's LSN and
// time in every row at finish; the file's stats and partition are those of
// a file written at commit.
func TestDeferredChangelogFile(t *testing.T) {
	rel, sc := keyValueChangelog(t)
	c := &changelog{icebergTable: &icebergTable{ident: []string{"public", "t__changelog"}}, rel: rel}
	if err := c.bindTo(sc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "changes.parquet")
	d, pos, err := newDeferredWriter(icebergio.LocalFS{}, path, sc, ChangelogSpec(sc), nil, []string{colLSN, colCommitTS}, parquetx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx [8]int
	for i, f := range c.idx {
		idx[i] = pos[f]
	}
	if idx[1] != -1 || idx[3] != -1 {
		t.Fatalf("lsn and commit_ts have builders %d, %d; want none", idx[1], idx[3])
	}
	text := func(s string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(s)} }
	rows := []struct {
		op            decode.Op
		before, after decode.Tuple
		unavailable   []string
	}{
		{decode.Insert, nil, decode.Tuple{text("1"), text("one")}, nil},
		{decode.Update, decode.Tuple{text("1"), {Kind: decode.Null}}, decode.Tuple{text("1"), text("uno")}, nil},
		{decode.Update, nil, decode.Tuple{text("1"), {Kind: decode.Null}}, []string{"v"}},
		{decode.Delete, decode.Tuple{text("1"), {Kind: decode.Null}}, nil, nil},
	}
	for i, r := range rows {
		if err := c.appendTo(d.bld.Field, &idx, r.op, txInfo{xid: 42}, int64(i+1), r.before, r.after, r.unavailable); err != nil {
			t.Fatal(err)
		}
		d.rows++
	}
	if err := d.seal(); err != nil {
		t.Fatal(err)
	}
	const lsn = decode.LSN(0x1234_5678)
	at := time.Date(2026, 11, 30, 18, 0, 0, 123456000, time.UTC)
	late := make([]arrow.Array, len(d.late))
	for j, f := range d.late {
		late[j] = constantArray(f.Type, d.rows, lsn, at)
	}
	df, err := d.finish(late)
	if err != nil {
		t.Fatal(err)
	}
	if df.Count() != 4 {
		t.Errorf("file has %d rows, want 4", df.Count())
	}
	lsnField, _ := sc.FindFieldByName(colLSN)
	for name, bounds := range map[string]map[int][]byte{"lower": df.LowerBoundValues(), "upper": df.UpperBoundValues()} {
		if got := binary.LittleEndian.Uint64(bounds[lsnField.ID]); got != uint64(lsn) {
			t.Errorf("lsn %s bound = %#x, want %#x", name, got, uint64(lsn))
		}
	}
	if got, want := fmt.Sprint(df.Partition()[1000]), fmt.Sprint(at.Unix()/86400); got != want {
		t.Errorf("partition commit_ts_day = %v, want %v", got, want)
	}
	rec := readFile(t, path)
	names := rec.Schema().Fields()
	if names[len(names)-2].Name != colLSN || names[len(names)-1].Name != colCommitTS {
		t.Errorf("file columns %v: want lsn and commit_ts last", rec.Schema())
	}
	for r := range 4 {
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		if got := col(colLSN).ValueStr(r); got != "305419896" {
			t.Errorf("row %d lsn = %s, want 305419896", r, got)
		}
		if got := col(colCommitTS).ValueStr(r); got != "2026-11-30T18:00:00.123456Z" {
			t.Errorf("row %d commit_ts = %s", r, got)
		}
		if got, want := col(colSeq).ValueStr(r), []string{"1", "2", "3", "4"}[r]; got != want {
			t.Errorf("row %d seq = %s, want %s", r, got, want)
		}
		if got, want := col(colOp).ValueStr(r), string(rows[r].op); got != want {
			t.Errorf("row %d op = %s, want %s", r, got, want)
		}
	}
	if got := col0(rec, colAfter).ValueStr(1); got != `{"id":1,"v":"uno"}` {
		t.Errorf("row 2 after = %s", got)
	}
	for r, want := range []string{"(null)", "(null)", `["v"]`, "(null)"} {
		if got := col0(rec, colUnavailable).ValueStr(r); got != want {
			t.Errorf("row %d unavailable = %s, want %s", r+1, got, want)
		}
	}
}

func col0(rec arrow.RecordBatch, name string) arrow.Array {
	return rec.Column(rec.Schema().FieldIndices(name)[0])
}
