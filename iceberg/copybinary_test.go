package iceberg

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// copyTypes is decode's captured COPY output of one table (see
// decode/copybinary_test.go): its relation, and its rows in text and in
// binary form (copies: the parsers' tuples do not outlive a row).
func copyTypes(t testing.TB) (rel *decode.Relation, text, bin []decode.Tuple) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile("../decode/testdata/copy_types." + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rel = &decode.Relation{ID: 1, Schema: "public", Name: "copy_types"}
	for _, line := range strings.Split(strings.TrimSpace(string(read("columns"))), "\n") {
		var c decode.Column
		if _, err := fmt.Sscan(line, &c.Name, &c.TypeOID, &c.TypeMod); err != nil {
			t.Fatalf("column %q: %v", line, err)
		}
		c.Key = c.Name == "id"
		rel.Columns = append(rel.Columns, c)
	}
	keep := func(rows *[]decode.Tuple) func(decode.Tuple) error {
		return func(tup decode.Tuple) error {
			c := make(decode.Tuple, len(tup))
			for i, d := range tup {
				c[i] = decode.Datum{Kind: d.Kind, Data: bytes.Clone(d.Data)}
				if d.Kind != decode.Null && c[i].Data == nil {
					c[i].Data = []byte{}
				}
			}
			*rows = append(*rows, c)
			return nil
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(read("txt")), "\n"), "\n") {
		tup, err := decode.ParseCopyText([]byte(line), len(rel.Columns))
		if err != nil {
			t.Fatal(err)
		}
		_ = keep(&text)(tup)
	}
	var p decode.CopyBinaryParser
	if err := p.Feed(read("bin"), len(rel.Columns), keep(&bin)); err != nil {
		t.Fatal(err)
	}
	if err := p.End(); err != nil {
		t.Fatal(err)
	}
	if len(text) != len(bin) {
		t.Fatalf("%d text rows, %d binary rows", len(text), len(bin))
	}
	return rel, text, bin
}

// arrowTypeOf is the Arrow type of an Iceberg type, as the writers build it.
func arrowTypeOf(t testing.TB, typ icego.Type) arrow.DataType {
	t.Helper()
	asc, err := tableArrowSchema(icego.NewSchema(0, icego.NestedField{ID: 1, Name: "v", Type: typ}))
	if err != nil {
		t.Fatal(err)
	}
	return asc.Field(0).Type
}

// valueBytes renders the value a builder got as the bytes of its key
// encoding: exact, floats by their bits.
func valueBytes(t testing.TB, b array.Builder) string {
	t.Helper()
	arr := b.NewArray()
	defer arr.Release()
	if arr.Len() != 1 {
		t.Fatalf("builder holds %d values", arr.Len())
	}
	if arr.IsNull(0) {
		return "NULL"
	}
	k, err := keyindex.AppendArray(nil, arr, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", k)
}

// TestBinaryValuesEqualText: every value of the captured table, read from
// its binary form, is the Arrow value and the key its text form gives, and
// a value the text form refuses the binary form refuses too; also into the
// wider types columns are promoted to.
func TestBinaryValuesEqualText(t *testing.T) {
	rel, text, bin := copyTypes(t)
	promoted := map[string]icego.Type{
		"i2": icego.PrimitiveTypes.Int64, "i4": icego.PrimitiveTypes.Int64,
		"f4": icego.PrimitiveTypes.Float64, "n": icego.DecimalTypeOf(20, 3),
	}
	refused, compared := 0, 0
	for ci, c := range rel.Columns {
		if !mapping.BinaryReadable(rel.QualifiedName(), c) {
			t.Errorf("column %s: not read in binary form", c.Name)
			continue
		}
		typ, err := mapping.For(rel.QualifiedName(), c)
		if err != nil {
			t.Fatal(err)
		}
		types := []icego.Type{typ}
		if p, ok := promoted[c.Name]; ok {
			types = append(types, p)
		}
		for _, typ := range types {
			dt := arrowTypeOf(t, typ)
			for r := range text {
				td, bd := text[r][ci], bin[r][ci]
				if td.Kind == decode.Null {
					continue
				}
				name := fmt.Sprintf("%s %s row %d (%q)", c.Name, dt, r, td.Data)
				tb := array.NewBuilder(memory.DefaultAllocator, dt)
				bb := array.NewBuilder(memory.DefaultAllocator, dt)
				terr := appendCell(tb, &rel.Columns[ci], td.Data)
				berr := mapping.AppendBinary(bb, c.TypeOID, bd.Data)
				switch {
				case (terr == nil) != (berr == nil):
					t.Errorf("%s: text form gives error %v, binary form %v", name, terr, berr)
				case terr != nil:
					refused++
					if tb.Len() != 0 || bb.Len() != 0 {
						t.Errorf("%s: a refused value left %d, %d values in the builders", name, tb.Len(), bb.Len())
					}
				default:
					compared++
					if tv, bv := valueBytes(t, tb), valueBytes(t, bb); tv != bv {
						t.Errorf("%s: text form gives %s, binary form %s", name, tv, bv)
					}
				}
				if isKeyType(dt) {
					tk, terr := keyindex.AppendText(nil, dt, td.Data)
					bk, berr := keyindex.AppendBinary(nil, dt, c.TypeOID, bd.Data)
					if (terr == nil) != (berr == nil) || !bytes.Equal(tk, bk) {
						t.Errorf("%s: key from text %x, %v; from binary %x, %v", name, tk, terr, bk, berr)
					}
				}
				tb.Release()
				bb.Release()
			}
		}
	}
	if refused < 8 || compared < 150 {
		t.Errorf("%d values compared, %d refused: the captured rows lost their edge values", compared, refused)
	}
}

// isKeyType says whether keyindex.AppendText encodes dt (every type of the
// captured table but NaN-free decimals; all are).
func isKeyType(dt arrow.DataType) bool {
	_, err := keyindex.AppendText(nil, dt, []byte("0"))
	return err == nil || !strings.Contains(err.Error(), "cannot be part of a key")
}

// TestCopyWriterBinaryRows: a mirror writes a binary row's values and key
// as it writes the text row's, and an error names the table, the column
// and the key in readable form.
func TestCopyWriterBinaryRows(t *testing.T) {
	rel, text, bin := copyTypes(t)
	var fields []icego.NestedField
	for i, c := range rel.Columns {
		typ, err := mapping.For(rel.QualifiedName(), c)
		if err != nil {
			t.Fatal(err)
		}
		fields = append(fields, icego.NestedField{ID: i + 1, Name: c.Name, Type: typ, Required: c.Key})
	}
	m, asc := testMirror(t, rel, fields)
	tw := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	bw := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	for r := range text {
		tk, terr := m.appendKey(nil, text[r])
		bk, berr := m.appendKey(nil, bin[r])
		if terr != nil || berr != nil || !bytes.Equal(tk, bk) {
			t.Errorf("row %d: key from text %x, %v; from binary %x, %v", r, tk, terr, bk, berr)
		}
		terr = m.appendRow(tw.Field, text[r])
		berr = m.appendRow(bw.Field, bin[r])
		if (terr == nil) != (berr == nil) {
			t.Fatalf("row %d: text row gives %v, binary row %v", r, terr, berr)
		}
		if terr != nil {
			// The column and the key, as the text path names them.
			id, _ := strconv.ParseInt(string(text[r][0].Data), 10, 64)
			prefix := fmt.Sprintf("public.copy_types: column %s, key (id=%d): ", strings.Split(strings.TrimPrefix(terr.Error(), "public.copy_types: column "), ",")[0], id)
			if !strings.HasPrefix(terr.Error(), prefix) || !strings.HasPrefix(berr.Error(), prefix) {
				t.Errorf("row %d: errors\n%v\n%v\nwant both to start %q", r, terr, berr, prefix)
			}
			// Start both records over: a failed row leaves earlier columns.
			tw.Release()
			bw.Release()
			tw = array.NewRecordBuilder(memory.DefaultAllocator, asc)
			bw = array.NewRecordBuilder(memory.DefaultAllocator, asc)
			continue
		}
		trec, brec := tw.NewRecordBatch(), bw.NewRecordBatch()
		for ci := range int(trec.NumCols()) {
			tv, bv := fmt.Sprint(recordKeys(t, trec.Column(ci))), fmt.Sprint(recordKeys(t, brec.Column(ci)))
			if tv != bv {
				t.Errorf("row %d column %s: text %s, binary %s", r, rel.Columns[ci].Name, tv, bv)
			}
		}
		trec.Release()
		brec.Release()
	}
	if s := m.keyText(bin[len(bin)-1]); s != "(id=9223372036854775807)" {
		t.Errorf("keyText of a binary row = %s", s)
	}
}

// testMirror is a mirror of rel, keyed by its first column, bound to a
// table of fields, without a catalog: enough to encode keys and rows.
func testMirror(t testing.TB, rel *decode.Relation, fields []icego.NestedField) (*mirror, *arrow.Schema) {
	t.Helper()
	sc := icego.NewSchemaWithIdentifiers(0, []int{1}, fields...)
	asc, err := tableArrowSchema(sc)
	if err != nil {
		t.Fatal(err)
	}
	m := &mirror{icebergTable: &icebergTable{ident: table.Identifier{rel.Schema, rel.Name}}, rel: rel}
	if m.colIdx, m.unbound, err = bindFields(m.name(), rel, asc.Fields(), sc.Fields()); err != nil {
		t.Fatal(err)
	}
	m.keyCols, m.keyType = []int{0}, []arrow.DataType{asc.Field(0).Type}
	return m, asc
}

func recordKeys(t testing.TB, arr arrow.Array) []string {
	var out []string
	for i := range arr.Len() {
		if arr.IsNull(i) {
			out = append(out, "NULL")
			continue
		}
		k, err := keyindex.AppendArray(nil, arr, i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x", k))
	}
	return out
}

// BenchmarkCopyRow compares a 4-column row (bigint, integer, text,
// timestamptz), the bench's backfill table, through the text and binary
// paths: parse, key, Arrow values.
// narrowMirror is a mirror of the benchmark's narrow table (bench/): id
// bigint key, k integer, v text, ts timestamptz.
func narrowMirror(b testing.TB) (*mirror, *arrow.Schema) {
	rel := &decode.Relation{ID: 1, Schema: "bench", Name: "narrow", Columns: []decode.Column{
		{Name: "id", TypeOID: mapping.OIDInt8, TypeMod: -1, Key: true},
		{Name: "k", TypeOID: mapping.OIDInt4, TypeMod: -1},
		{Name: "v", TypeOID: mapping.OIDText, TypeMod: -1},
		{Name: "ts", TypeOID: mapping.OIDTimestampTZ, TypeMod: -1},
	}}
	fields := []icego.NestedField{
		{ID: 1, Name: "id", Type: icego.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "k", Type: icego.PrimitiveTypes.Int32},
		{ID: 3, Name: "v", Type: icego.PrimitiveTypes.String},
		{ID: 4, Name: "ts", Type: icego.PrimitiveTypes.TimestampTz},
	}
	return testMirror(b, rel, fields)
}

func BenchmarkCopyRow(b *testing.B) {
	const rows = 8192
	var txt bytes.Buffer
	bin := []byte("PGCOPY\n\377\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	field := func(v []byte) {
		bin = append(bin, byte(len(v)>>24), byte(len(v)>>16), byte(len(v)>>8), byte(len(v)))
		bin = append(bin, v...)
	}
	for i := range rows {
		id := int64(1_000_000 + i)
		ts := int64(817_000_000_000_000 + i*1_000_003) // µs since 2000
		v := fmt.Sprintf("%032x", id*7919)
		fmt.Fprintf(&txt, "%d\t%d\t%s\t%s\n", id, i%1000, v, time2000(ts))
		bin = append(bin, 0, 4)
		field([]byte{byte(id >> 56), byte(id >> 48), byte(id >> 40), byte(id >> 32), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)})
		k := int32(i % 1000)
		field([]byte{byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k)})
		field([]byte(v))
		field([]byte{byte(ts >> 56), byte(ts >> 48), byte(ts >> 40), byte(ts >> 32), byte(ts >> 24), byte(ts >> 16), byte(ts >> 8), byte(ts)})
	}
	bin = append(bin, 0xff, 0xff)
	m, asc := narrowMirror(b)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	var keys []byte
	type binaryData interface {
		DataLen() int
		ReserveData(int)
	}
	row := func(tup decode.Tuple) error {
		var err error
		keys, err = m.appendKey(keys[:0], tup)
		if err == nil {
			err = m.appendRow(bld.Field, tup)
		}
		if bld.Field(0).Len() >= parquetx.BatchRows {
			// As parquetx.Writer does, without the Parquet writer.
			data := bld.Field(2).(binaryData).DataLen()
			bld.NewRecordBatch().Release()
			bld.Reserve(parquetx.BatchRows)
			bld.Field(2).(binaryData).ReserveData(data)
		}
		return err
	}
	b.Run("text", func(b *testing.B) {
		data := txt.Bytes()
		b.SetBytes(int64(len(data)))
		var p decode.CopyTextParser
		for b.Loop() {
			for rest := data; len(rest) > 0; {
				i := bytes.IndexByte(rest, '\n')
				tup, err := p.Parse(rest[:i], 4)
				if err != nil {
					b.Fatal(err)
				}
				if err := row(tup); err != nil {
					b.Fatal(err)
				}
				rest = rest[i+1:]
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	b.Run("binary", func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		var p decode.CopyBinaryParser
		for b.Loop() {
			if err := p.Feed(bin, 4, row); err != nil {
				b.Fatal(err)
			}
			if err := p.End(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
}

// time2000 renders µs since 2000-01-01 as timestamptz text in UTC.
func time2000(us int64) string {
	const epoch2000 = 946684800
	sec, frac := us/1_000_000, us%1_000_000
	return time.Unix(epoch2000+sec, 0).UTC().Format("2006-01-02 15:04:05") + fmt.Sprintf(".%06d+00", frac)
}
