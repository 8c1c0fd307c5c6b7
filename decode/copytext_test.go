package decode_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// nullField marks a NULL in the expected fields of a test case.
const nullField = "\x00NULL"

func TestParseCopyText(t *testing.T) {
	tests := []struct {
		line    string
		columns int
		want    []string // nullField for NULL
		wantErr string
	}{
		{line: `1	abc	\N`, columns: 3, want: []string{"1", "abc", nullField}},
		{line: ``, columns: 1, want: []string{""}},
		{line: `\N`, columns: 1, want: []string{nullField}},
		{line: "\t", columns: 2, want: []string{"", ""}},
		{line: `\N	`, columns: 2, want: []string{nullField, ""}},
		{line: `\\N`, columns: 1, want: []string{`\N`}},
		{line: `a\N`, columns: 1, want: []string{"aN"}},
		{line: `\NN`, columns: 1, want: []string{"NN"}},
		{line: `\b\f\n\r\t\v\\`, columns: 1, want: []string{"\b\f\n\r\t\v\\"}},
		{line: `a\tb	c\nd`, columns: 2, want: []string{"a\tb", "c\nd"}},
		// Octal: one to three digits; the value is taken modulo 256.
		{line: `\0\01\101\1012\8`, columns: 1, want: []string{"\x00\x01A" + "A2" + "8"}},
		{line: `\377\400\777`, columns: 1, want: []string{"\xff\x00\xff"}},
		// Hex: \x with one or two digits; \x alone is a plain x.
		{line: `\x41\x4a\xA\xg\x`, columns: 1, want: []string{"AJ\nxgx"}},
		{line: `\x414`, columns: 1, want: []string{"A4"}},
		// Any other escaped character is itself.
		{line: `\a\q\"\ä`, columns: 1, want: []string{`aq"ä`}},
		{line: "h\xc3\xa4agen\t\\\\x00ff", columns: 2, want: []string{"häagen", `\x00ff`}},
		{line: `1	2`, columns: 3, wantErr: "2 fields, want 3"},
		{line: `1	2	3`, columns: 2, wantErr: "3 fields, want 2"},
		{line: ``, columns: 2, wantErr: "1 fields, want 2"},
		{line: `a	b\`, columns: 2, wantErr: "copy field 2: trailing backslash"},
	}
	var parser decode.CopyTextParser // reused across the cases
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, err := decode.ParseCopyText([]byte(tt.line), tt.columns)
			reused, rerr := parser.Parse([]byte(tt.line), tt.columns)
			if (rerr == nil) != (err == nil) || fmt.Sprint(fields(reused)) != fmt.Sprint(fields(got)) {
				t.Errorf("CopyTextParser.Parse(%q, %d) = %q, %v; ParseCopyText gives %q, %v", tt.line, tt.columns, fields(reused), rerr, fields(got), err)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCopyText(%q, %d) = %v, %v; want error %q", tt.line, tt.columns, fields(got), err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCopyText(%q, %d) error: %v", tt.line, tt.columns, err)
			}
			if g := fields(got); strings.Join(g, "|") != strings.Join(tt.want, "|") || len(g) != len(tt.want) {
				t.Errorf("ParseCopyText(%q, %d) = %q, want %q", tt.line, tt.columns, g, tt.want)
			}
			for i, d := range got {
				if d.Kind == decode.Null && d.Data != nil {
					t.Errorf("field %d: NULL with data %q", i, d.Data)
				}
				if d.Kind == decode.Text && d.Data == nil {
					t.Errorf("field %d: text with nil data", i)
				}
			}
		})
	}
}

func fields(tup decode.Tuple) []string {
	var out []string
	for _, d := range tup {
		switch d.Kind {
		case decode.Null:
			out = append(out, nullField)
		case decode.Text:
			out = append(out, string(d.Data))
		default:
			out = append(out, "\x00KIND")
		}
	}
	return out
}

// TestParseCopyTextFieldsDoNotOverlap: the fields share one buffer;
// appending to one must not overwrite the next.
func TestParseCopyTextFieldsDoNotOverlap(t *testing.T) {
	got, err := decode.ParseCopyText([]byte("ab\tcd\tef"), 3)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0].Data, "XY"...)
	if g := fields(got); strings.Join(g, "|") != "ab|cd|ef" {
		t.Errorf("after appending to field 0: fields = %q, want [ab cd ef]", g)
	}
	line := []byte(`x\ty`)
	got, err = decode.ParseCopyText(line, 1)
	if err != nil {
		t.Fatal(err)
	}
	line[0] = 'Z'
	if string(got[0].Data) != "x\ty" {
		t.Errorf("field aliases the input line: %q", got[0].Data)
	}
}

// escapeCopy writes a value the way COPY ... TO (FORMAT text) does
// (CopyAttributeOutText): backslash escapes for the control characters
// COPY uses, backslash doubled, everything else as is.
func escapeCopy(v []byte) []byte {
	var b []byte
	for _, c := range v {
		switch c {
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\v':
			b = append(b, `\v`...)
		case '\\':
			b = append(b, `\\`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func encodeCopyLine(vals [][]byte) []byte {
	var parts [][]byte
	for _, v := range vals {
		if v == nil {
			parts = append(parts, []byte(`\N`))
			continue
		}
		parts = append(parts, escapeCopy(v))
	}
	return bytes.Join(parts, []byte{'\t'})
}

func TestParseCopyTextRoundTrip(t *testing.T) {
	vals := [][]byte{
		[]byte(""), nil, []byte(`\N`), []byte("\\"), []byte("tab\there"), []byte("line\nbreak\r\n"),
		[]byte("\b\f\v"), []byte("\x00\x01\xff"), []byte("häagen"), []byte(`\x00ff`), []byte("NULL"),
	}
	line := encodeCopyLine(vals)
	got, err := decode.ParseCopyText(line, len(vals))
	if err != nil {
		t.Fatalf("ParseCopyText(%q) error: %v", line, err)
	}
	for i, v := range vals {
		if (v == nil) != (got[i].Kind == decode.Null) || !bytes.Equal(got[i].Data, v) {
			t.Errorf("field %d = %s, want %q (nil: %t)", i, renderDatum(got[i]), v, v == nil)
		}
	}
}

// TestCopyTextParserFields: a reused parser's fields do not overlap, and a
// field with escapes is not overwritten by the next line's.
func TestCopyTextParserFields(t *testing.T) {
	var p decode.CopyTextParser
	got, err := p.Parse([]byte(`a\b	cd	\N`), 3)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0].Data, "XY"...)
	_ = append(got[1].Data, "XY"...)
	if g := fields(got); strings.Join(g, "|") != "a\b|cd|"+nullField {
		t.Errorf("after appending to fields 0 and 1: fields = %q", g)
	}
	got, err = p.Parse([]byte(`e\\f	\tg	h`), 3)
	if err != nil {
		t.Fatal(err)
	}
	if g := fields(got); strings.Join(g, "|") != `e\f|`+"\tg|h" {
		t.Errorf("second line: fields = %q", g)
	}
}

// FuzzParseCopyText: seed corpus in testdata/fuzz/FuzzParseCopyText.
func FuzzParseCopyText(f *testing.F) {
	var parser decode.CopyTextParser // reused across inputs
	f.Fuzz(func(t *testing.T, line []byte, columns uint8) {
		n := int(columns % 64)
		got, err := decode.ParseCopyText(line, n)
		reused, rerr := parser.Parse(line, n)
		if (rerr == nil) != (err == nil) || len(reused) != len(got) {
			t.Fatalf("CopyTextParser.Parse(%q, %d) = %d fields, %v; ParseCopyText: %d, %v", line, n, len(reused), rerr, len(got), err)
		}
		for i := range got {
			if reused[i].Kind != got[i].Kind || !bytes.Equal(reused[i].Data, got[i].Data) || (got[i].Kind == decode.Text) != (reused[i].Data != nil) {
				t.Fatalf("field %d: CopyTextParser.Parse gives %s, ParseCopyText %s", i, renderDatum(reused[i]), renderDatum(got[i]))
			}
		}
		if err == nil {
			if len(got) != n || bytes.Count(line, []byte{'\t'})+1 != n {
				t.Fatalf("ParseCopyText(%q, %d) = %d fields", line, n, len(got))
			}
			// Re-escaping what was parsed and parsing again gives the same.
			vals := make([][]byte, len(got))
			for i, d := range got {
				switch d.Kind {
				case decode.Null:
					if d.Data != nil {
						t.Fatalf("NULL with data %q", d.Data)
					}
				case decode.Text:
					vals[i] = d.Data
					if vals[i] == nil {
						vals[i] = []byte{}
					}
				default:
					t.Fatalf("field %d of kind %d", i, d.Kind)
				}
			}
			again, err := decode.ParseCopyText(encodeCopyLine(vals), n)
			if err != nil {
				t.Fatalf("re-parse of %q: %v", encodeCopyLine(vals), err)
			}
			for i := range got {
				if again[i].Kind != got[i].Kind || !bytes.Equal(again[i].Data, got[i].Data) {
					t.Fatalf("field %d: %s after a round trip, was %s", i, renderDatum(again[i]), renderDatum(got[i]))
				}
			}
		}
		// Any values, escaped as COPY does, parse back unchanged.
		vals := bytes.Split(line, []byte{0})
		for i := range vals {
			if len(vals[i]) == 1 && vals[i][0] == 'N' {
				vals[i] = nil // exercise NULL too
			}
		}
		enc := encodeCopyLine(vals)
		back, err := decode.ParseCopyText(enc, len(vals))
		if err != nil {
			t.Fatalf("ParseCopyText(%q) of escaped values: %v", enc, err)
		}
		for i, v := range vals {
			if (v == nil) != (back[i].Kind == decode.Null) || !bytes.Equal(back[i].Data, v) {
				t.Fatalf("value %d: %q escaped as %q parsed back as %s", i, v, enc, renderDatum(back[i]))
			}
		}
	})
}
