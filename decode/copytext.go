package decode

import (
	"bytes"
	"fmt"
)

// ParseCopyText splits one line of COPY ... TO STDOUT (FORMAT text) output
// (without its trailing newline) into a Tuple of Text and Null datums,
// undoing COPY's backslash escapes. The values are then in the same text
// output form pgoutput sends, so one value decoder serves both paths.
//
// The datums of the returned tuple share one freshly allocated buffer.
func ParseCopyText(line []byte, columns int) (Tuple, error) {
	out, _, err := splitCopyText(make(Tuple, 0, columns), make([]byte, 0, len(line)), line, columns, false)
	return out, err
}

// CopyTextParser is ParseCopyText for a stream of lines, without an
// allocation per line: it reuses one tuple, and a field without escapes is
// a slice of the line itself. The zero value is ready to use; a parser is
// used by one goroutine.
type CopyTextParser struct {
	tuple Tuple
	buf   []byte // unescaped fields
}

// Parse parses one line as ParseCopyText does. The tuple and its data are
// valid until the next Parse and as long as line is unchanged.
func (p *CopyTextParser) Parse(line []byte, columns int) (Tuple, error) {
	if cap(p.buf) < len(line) {
		p.buf = make([]byte, 0, len(line)) // no field outgrows it: unescaping only shortens
	}
	out, _, err := splitCopyText(p.tuple[:0], p.buf[:0], line, columns, true)
	if cap(out) > cap(p.tuple) {
		p.tuple = out
	}
	return out, err
}

// splitCopyText appends the fields of line to out, unescaping into buf;
// with alias, a field without escapes is a slice of line instead.
func splitCopyText(out Tuple, buf, line []byte, columns int, alias bool) (Tuple, []byte, error) {
	for {
		field, rest, more := bytes.Cut(line, tab)
		line = rest
		switch {
		case len(field) == 2 && field[0] == '\\' && field[1] == 'N':
			out = append(out, Datum{Kind: Null})
		case alias && bytes.IndexByte(field, '\\') < 0:
			if field == nil {
				field = []byte{}
			}
			out = append(out, Datum{Kind: Text, Data: field[:len(field):len(field)]})
		default:
			from := len(buf)
			var err error
			buf, err = unescapeCopy(buf, field)
			if err != nil {
				return nil, buf, fmt.Errorf("copy field %d: %w", len(out)+1, err)
			}
			out = append(out, Datum{Kind: Text, Data: buf[from:len(buf):len(buf)]})
		}
		if !more {
			break
		}
	}
	if len(out) != columns {
		return nil, buf, fmt.Errorf("copy line has %d fields, want %d", len(out), columns)
	}
	return out, buf, nil
}

var tab = []byte{'\t'}

func unescapeCopy(dst, field []byte) ([]byte, error) {
	for i := 0; i < len(field); i++ {
		c := field[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i == len(field) {
			return nil, fmt.Errorf("trailing backslash")
		}
		switch c = field[i]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'v':
			dst = append(dst, '\v')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(field) && isHex(field[i+1]) {
				i++
				v = v*16 + hexVal(field[i])
				n++
			}
			if n == 0 {
				dst = append(dst, 'x')
			} else {
				dst = append(dst, byte(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for n := 1; n < 3 && i+1 < len(field) && field[i+1] >= '0' && field[i+1] <= '7'; n++ {
				i++
				v = v*8 + int(field[i]-'0')
			}
			dst = append(dst, byte(v))
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}
