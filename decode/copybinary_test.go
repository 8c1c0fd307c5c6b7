package decode_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

var captureCopy = flag.Bool("capture-copy", false, "capture testdata/copy_types.* from a throwaway PostgreSQL server (needs PostgreSQL binaries)")

// copyTypesSetup is the table whose COPY output testdata/copy_types.*
// holds, in binary form (.bin), in text form (.txt) and the columns
// (.columns: name, type OID and typmod a line). Every type of the binary
// copy, with the edge values of each; rows 7 and later hold a value
// Iceberg cannot (infinity, beyond Iceberg's timestamp range, NaN in a
// decimal), which both forms must refuse alike (see iceberg's tests).
const copyTypesSetup = `
CREATE TABLE copy_types (
	id bigint PRIMARY KEY, i2 smallint, i4 integer, f4 real, f8 double precision, b boolean,
	t text, vc varchar(10), bp char(5), by bytea, d date, ts timestamp, tz timestamptz,
	u uuid, n numeric(12,3), nneg numeric(5,-2), nfrac numeric(3,5), nbig numeric(38,10)
);
INSERT INTO copy_types VALUES
(1, 12, 345, 1.1, 0.1, true, 'plain', 'vc', 'ab', '\x0102', '2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+05:30',
 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1.5, 1234567, 0.00123, 12345.6789),
(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(-9223372036854775808, -32768, -2147483648, '-Infinity', '-Infinity', false, '', '', '', '\x', '4713-01-01 BC',
 '4713-11-24 00:00:00 BC', '4713-11-24 00:00:00+00 BC', '00000000-0000-0000-0000-000000000000',
 -999999999.999, -9999900, -0.00999, -9999999999999999999999999999.9999999999),
(9223372036854775807, 32767, 2147483647, 'Infinity', 'Infinity', true, E'back\\slash\ttab\nnew\rline \\N', 'é€😀', ' a', '\x00ff5c0a095c4e',
 '5874897-12-31', '294247-01-10 04:00:54.775807', '294247-01-10 04:00:54.775807+00', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
 999999999.999, 9999900, 0.00999, 9999999999999999999999999999.9999999999),
(5, 0, 0, 'NaN', 'NaN', false, E'\\', '\N', '     ', '\x5c', '2000-01-01', '2000-01-01 00:00:00', '1970-01-01 00:00:00+00',
 '123e4567-e89b-12d3-a456-426614174000', 0, 0, 0, 0),
(6, -1, -1, '-0', '-0', true, 'x', 'y', 'z', '\x00', '1999-12-31', '1999-12-31 23:59:59.999999', '0001-01-01 00:00:00+00 BC',
 '123e4567-e89b-12d3-a456-426614174001', -0.001, -100, 0.00001, 0.0000000001),
(7, 1, 1, 1.4e-45, 5e-324, true, 'a', 'b', 'c', '\x01', '0044-03-15 BC', '0044-03-15 12:00:00.000001 BC', '2262-04-11 23:47:16.854775+00',
 '123e4567-e89b-12d3-a456-426614174002', 12.3, 12300, 0.001, 1),
(8, 2, 2, 3.4028235e38, 1.7976931348623157e308, true, 'a', 'b', 'c', '\x01', 'infinity', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(9, 3, 3, -1.1754944e-38, -2.2250738585072014e-308, true, 'a', 'b', 'c', '\x01', '-infinity', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(10, 4, 4, 0.33333334, 0.3333333333333333, true, 'a', 'b', 'c', '\x01', NULL, 'infinity', '-infinity', NULL, NULL, NULL, NULL, NULL),
(11, 5, 5, 16777216, 9007199254740993, true, 'a', 'b', 'c', '\x01', NULL, '-infinity', 'infinity', NULL, NULL, NULL, NULL, NULL),
(12, 6, 6, 1e10, 1e22, true, 'a', 'b', 'c', '\x01', NULL, '294276-12-31 23:59:59.999999', '294247-01-10 04:00:54.775808+00', NULL, NULL, NULL, NULL, NULL),
(13, 7, 7, 123456.79, 123456.789012345, true, 'a', 'b', 'c', '\x01', NULL, NULL, NULL, NULL, 'NaN', NULL, NULL, NULL);
`

// TestCaptureCopyTypes refreshes testdata/copy_types.*; it only runs with
// -capture-copy:
//
//	go test ./decode -run TestCaptureCopyTypes -capture-copy -v
func TestCaptureCopyTypes(t *testing.T) {
	if !*captureCopy {
		t.Skip("run with -capture-copy to refresh testdata/copy_types.* from a throwaway PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	if err := pg.Exec(ctx, copyTypesSetup); err != nil {
		t.Fatal(err)
	}
	conn, err := pg.Conn(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The bridge's session settings (see package mapping).
	for _, set := range []string{"SET DateStyle = 'ISO, YMD'", "SET TimeZone = 'UTC'", "SET extra_float_digits = 3", "SET bytea_output = 'hex'"} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	var cols bytes.Buffer
	rows, err := conn.Query(ctx, "SELECT attname, atttypid, atttypmod FROM pg_attribute WHERE attrelid = 'copy_types'::regclass AND attnum > 0 ORDER BY attnum")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var oid uint32
		var mod int32
		if err := rows.Scan(&name, &oid, &mod); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cols, "%s %d %d\n", name, oid, mod)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"copy_types.columns": cols.Bytes()}
	for ext, format := range map[string]string{"txt": "", "bin": " (FORMAT binary)"} {
		var out bytes.Buffer
		if _, err := conn.PgConn().CopyTo(ctx, &out, "COPY (SELECT * FROM copy_types ORDER BY id) TO STDOUT"+format); err != nil {
			t.Fatal(err)
		}
		files["copy_types."+ext] = out.Bytes()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d bytes to %s", len(data), name)
	}
}

// feedAll parses out in chunks of size (0: whole) and renders every row.
func feedAll(p *decode.CopyBinaryParser, out []byte, columns, size int) ([]string, error) {
	var rows []string
	row := func(t decode.Tuple) error {
		r := make([]string, len(t))
		for i, d := range t {
			r[i] = renderDatum(d)
		}
		rows = append(rows, strings.Join(r, " "))
		return nil
	}
	if size == 0 {
		size = len(out)
	}
	for len(out) > 0 {
		n := min(size, len(out))
		// A chunk the parser may not keep: scribble over it afterwards.
		chunk := bytes.Clone(out[:n])
		if err := p.Feed(chunk, columns, row); err != nil {
			return rows, err
		}
		for i := range chunk {
			chunk[i] = 0xee
		}
		out = out[n:]
	}
	return rows, p.End()
}

// TestCopyBinaryCaptured: the captured binary COPY output reads the same in
// any chunking, with NULLs where the text output has them and the bytes of
// the string and bytea values the text output escapes.
func TestCopyBinaryCaptured(t *testing.T) {
	bin, err := os.ReadFile("testdata/copy_types.bin")
	if err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile("testdata/copy_types.txt")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := os.ReadFile("testdata/copy_types.columns")
	if err != nil {
		t.Fatal(err)
	}
	columns := len(strings.Split(strings.TrimSpace(string(cols)), "\n"))
	var p decode.CopyBinaryParser // reused across the runs
	whole, err := feedAll(&p, bin, columns, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(txt), "\n"), "\n")
	if len(whole) != len(lines) || len(whole) != 13 {
		t.Fatalf("%d binary rows, %d text lines, want 13", len(whole), len(lines))
	}
	for _, size := range []int{1, 2, 3, 5, 7, 19, 20, 64, 1000} {
		got, err := feedAll(&p, bin, columns, size)
		if err != nil || strings.Join(got, "\n") != strings.Join(whole, "\n") {
			t.Errorf("in chunks of %d: %v\n%s\nwant\n%s", size, err, strings.Join(got, "\n"), strings.Join(whole, "\n"))
		}
	}
	// NULLs and raw bytes against the text form: t, vc, bp are strings,
	// by is bytea (\x hex in text).
	var rows []decode.Tuple
	if err := p.Feed(bin, columns, func(tup decode.Tuple) error {
		c := make(decode.Tuple, len(tup))
		for i, d := range tup {
			c[i] = decode.Datum{Kind: d.Kind, Data: bytes.Clone(d.Data)}
		}
		rows = append(rows, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.End(); err != nil {
		t.Fatal(err)
	}
	for r, line := range lines {
		text, err := decode.ParseCopyText([]byte(line), columns)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range rows[r] {
			if (d.Kind == decode.Null) != (text[i].Kind == decode.Null) || (d.Kind != decode.Null && d.Kind != decode.Binary) {
				t.Errorf("row %d field %d: binary %s, text %s", r, i, renderDatum(d), renderDatum(text[i]))
			}
			if d.Kind == decode.Null {
				continue
			}
			switch i {
			case 6, 7, 8:
				if !bytes.Equal(d.Data, text[i].Data) {
					t.Errorf("row %d string field %d: binary %q, text %q", r, i, d.Data, text[i].Data)
				}
			case 9:
				if want := fmt.Sprintf(`\x%x`, d.Data); want != string(text[i].Data) {
					t.Errorf("row %d bytea: binary %q, text %q", r, d.Data, text[i].Data)
				}
			}
		}
	}
}

// copyBinary builds binary COPY output: rows of fields (nil: NULL).
func copyBinary(rows ...[][]byte) []byte {
	out := []byte("PGCOPY\n\377\r\n\x00")
	out = binary.BigEndian.AppendUint32(out, 0)
	out = binary.BigEndian.AppendUint32(out, 0)
	for _, r := range rows {
		out = binary.BigEndian.AppendUint16(out, uint16(len(r)))
		for _, f := range r {
			if f == nil {
				out = binary.BigEndian.AppendUint32(out, 0xffffffff)
				continue
			}
			out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
			out = append(out, f...)
		}
	}
	return binary.BigEndian.AppendUint16(out, 0xffff)
}

func TestCopyBinaryErrors(t *testing.T) {
	good := copyBinary([][]byte{[]byte("a"), nil}, [][]byte{{}, []byte("bc")})
	header := len(good) - 2 - (2 + 4 + 1 + 4) - (2 + 4 + 0 + 4 + 2)
	withExt := append([]byte("PGCOPY\n\377\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x03xyz"), good[header:]...)
	for _, tc := range []struct {
		name    string
		data    []byte
		columns int
		want    string // error; "" for the rows of good
	}{
		{"good", good, 2, ""},
		{"header extension", withExt, 2, ""},
		{"wrong signature", append([]byte("PGCOPY\n\377\r\n\x01"), good[11:]...), 2, "does not start with the binary COPY signature"},
		{"text output", []byte("1\tabc\n"), 2, "does not start with the binary COPY signature"},
		{"critical flag", append(append(bytes.Clone(good[:11]), 0, 0, 0, 1), good[15:]...), 2, "flags 0x1"},
		{"oids flag", append(append(bytes.Clone(good[:11]), 0, 1, 0, 0), good[15:]...), 2, "flags 0x10000"},
		{"ignored flag", append(append(bytes.Clone(good[:11]), 0x80, 0, 0, 0), good[15:]...), 2, ""},
		{"negative extension", append(bytes.Clone(good[:15]), 0xff, 0xff, 0xff, 0xfe), 2, "extension claims -2 bytes"},
		{"wrong field count", good, 3, "copy row has 2 fields, want 3"},
		{"negative length", append(bytes.Clone(good[:header]), 0, 1, 0xff, 0xff, 0xff, 0xfe), 1, "copy field 1 claims -2 bytes"},
		{"huge length", append(bytes.Clone(good[:header]), 0, 1, 0x40, 0, 0, 0), 1, "copy field 1 claims 1073741824 bytes"},
		{"no trailer", good[:len(good)-2], 2, "without its trailer"},
		{"ends inside a row", good[:len(good)-4], 2, "ended inside a row"},
		{"ends inside the header", good[:7], 2, "ended inside a row"},
		{"empty", nil, 2, "without its trailer"},
		{"after the trailer", append(bytes.Clone(good), 0), 2, "1 bytes after its trailer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 3} {
				var p decode.CopyBinaryParser
				rows, err := feedAll(&p, tc.data, tc.columns, size)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("chunks of %d: %v", size, err)
				case tc.want == "" && strings.Join(rows, "|") != `binary:"a" NULL|binary:"" binary:"bc"`:
					t.Errorf("chunks of %d: rows %q", size, rows)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("chunks of %d: error %v, want %q", size, err, tc.want)
				}
			}
		})
	}
}

// TestCopyBinaryRowError: an error of the row function stops Feed, whole
// or split row alike.
func TestCopyBinaryRowError(t *testing.T) {
	data := copyBinary([][]byte{[]byte("abc")})
	for _, size := range []int{0, 1, 25} {
		var p decode.CopyBinaryParser
		stop := fmt.Errorf("stop")
		var err error
		for rest := data; len(rest) > 0 && err == nil; {
			n := len(rest)
			if size > 0 {
				n = min(size, n)
			}
			err = p.Feed(rest[:n], 1, func(decode.Tuple) error { return stop })
			rest = rest[n:]
		}
		if err != stop {
			t.Errorf("chunks of %d: Feed = %v, want the row function's error", size, err)
		}
	}
}

// TestCopyBinaryNoAllocation: rows whole in a chunk cost no allocation.
func TestCopyBinaryNoAllocation(t *testing.T) {
	row := [][]byte{[]byte("12345678"), []byte("text value"), nil, []byte("\x00\x01")}
	rows := make([][][]byte, 100)
	for i := range rows {
		rows[i] = row
	}
	data := copyBinary(rows...)
	var p decode.CopyBinaryParser
	n := 0
	count := func(decode.Tuple) error { n++; return nil }
	allocs := testing.AllocsPerRun(10, func() {
		if err := p.Feed(data, 4, count); err != nil {
			t.Fatal(err)
		}
		if err := p.End(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 || n != 1100 {
		t.Errorf("%v allocations per COPY of 100 rows, %d rows read", allocs, n)
	}
}

func FuzzParseCopyBinary(f *testing.F) {
	if bin, err := os.ReadFile("testdata/copy_types.bin"); err == nil {
		f.Add(bin, uint8(18), uint16(100))
	}
	f.Add(copyBinary([][]byte{[]byte("a"), nil}), uint8(2), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, columns uint8, split uint16) {
		n := int(columns % 64)
		var whole, parts decode.CopyBinaryParser
		a, aerr := feedAll(&whole, data, n, 0)
		b, berr := feedAll(&parts, data, n, int(split)%(len(data)+1))
		if (aerr == nil) != (berr == nil) || strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Fatalf("whole: %q, %v; in chunks of %d: %q, %v", a, aerr, split, b, berr)
		}
	})
}

// TestCopyBinaryClaimedLengthAllocatesLittle: a field that claims up to
// 1 GiB makes the parser wait for it, buffering only the bytes that came.
func TestCopyBinaryClaimedLengthAllocatesLittle(t *testing.T) {
	data := copyBinary()
	data = append(data[:len(data)-2], 0, 1, 0x3f, 0xff, 0xff, 0xff, 'a', 'b')
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var p decode.CopyBinaryParser
	for i := range data {
		if err := p.Feed(data[i:i+1], 1, func(decode.Tuple) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	if n := m1.TotalAlloc - m0.TotalAlloc; n > 64<<10 {
		t.Errorf("%d bytes of a row claiming 1 GiB allocated %d bytes", len(data), n)
	}
	if err := p.End(); err == nil || !strings.Contains(err.Error(), "ended inside a row") {
		t.Errorf("End = %v, want ended inside a row", err)
	}
}
