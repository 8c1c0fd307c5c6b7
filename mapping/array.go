package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// maxArrayDims is PostgreSQL's MAXDIM.
const maxArrayDims = 6

// Array is an array value read from its text output form (array_out).
type Array struct {
	// Dims holds the length of each dimension, outermost first; it is
	// empty for an empty array.
	Dims []int
	// Lower holds each dimension's lower bound: 1 unless the text carried
	// a [lower:upper] decoration.
	Lower []int
	// Elements are the elements in row-major order, unquoted and
	// unescaped; nil is a NULL element.
	Elements [][]byte
}

// ParseArray reads the text output form of an array whose elements are
// separated by delim (pg_type.typdelim of the element type: ',' for
// nearly every type, ';' for box, ':' for PostGIS types):
//
//	{1,2,NULL}   {{1,2},{3,4}}   {"a b","say \"hi\"",""}   [0:1]={7,8}   {}
//
// Elements are quoted when they hold the delimiter, braces, quotes,
// backslashes or white space, are empty, or read NULL; inside quotes a
// backslash escapes the next character. Only the forms array_out prints are
// accepted: no white space between elements, rectangular dimensions.
func ParseArray(text []byte, delim byte) (Array, error) {
	var a Array
	if delim == '"' || delim == '\\' || delim == '{' || delim == '}' || delim == 0 {
		return a, fmt.Errorf("bad array delimiter %q", delim)
	}
	s := text
	if len(s) > 0 && s[0] == '[' {
		var err error
		if a.Lower, a.Dims, s, err = parseArrayBounds(s); err != nil {
			return Array{}, err
		}
	}
	p := arrayParser{s: s, delim: delim}
	if err := p.parse(); err != nil {
		return Array{}, err
	}
	if a.Dims != nil {
		if len(p.dims) != len(a.Dims) {
			return Array{}, fmt.Errorf("array has %d dimensions but its bounds give %d", len(p.dims), len(a.Dims))
		}
		for i := range a.Dims {
			if p.dims[i] != a.Dims[i] {
				return Array{}, fmt.Errorf("dimension %d has %d elements but its bounds say %d", i+1, p.dims[i], a.Dims[i])
			}
		}
	} else {
		a.Dims = p.dims
		for range a.Dims {
			a.Lower = append(a.Lower, 1)
		}
	}
	a.Elements = p.elems
	return a, nil
}

// parseArrayBounds reads the decoration [l:u][l:u]...= that array_out
// prints when a lower bound is not 1.
func parseArrayBounds(s []byte) (lower, dims []int, rest []byte, err error) {
	bad := errors.New("malformed array bounds")
	for len(s) > 0 && s[0] == '[' {
		end := bytes.IndexByte(s, ']')
		if end < 0 {
			return nil, nil, nil, bad
		}
		lo, hi, ok := bytes.Cut(s[1:end], []byte{':'})
		if !ok {
			return nil, nil, nil, bad
		}
		l, err1 := strconv.Atoi(string(lo))
		u, err2 := strconv.Atoi(string(hi))
		if err1 != nil || err2 != nil || u < l || u-l >= 1<<27 {
			return nil, nil, nil, bad
		}
		lower = append(lower, l)
		dims = append(dims, u-l+1)
		if len(dims) > maxArrayDims {
			return nil, nil, nil, fmt.Errorf("more than %d array dimensions", maxArrayDims)
		}
		s = s[end+1:]
	}
	if len(s) == 0 || s[0] != '=' {
		return nil, nil, nil, bad
	}
	return lower, dims, s[1:], nil
}

type arrayParser struct {
	s     []byte
	pos   int
	delim byte
	dims  []int // length of each dimension, as first seen
	depth int   // number of dimensions, known once the first element is read
	elems [][]byte
}

func (p *arrayParser) errorf(format string, args ...any) error {
	return fmt.Errorf("malformed array at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *arrayParser) parse() error {
	if len(p.s) == 0 || p.s[0] != '{' {
		return p.errorf("no opening brace")
	}
	if len(p.s) == 2 && p.s[1] == '}' {
		return nil // empty array: no dimensions
	}
	if err := p.level(0); err != nil {
		return err
	}
	if p.pos != len(p.s) {
		return p.errorf("text after the closing brace")
	}
	return nil
}

// level reads one brace-enclosed level at nesting depth d.
func (p *arrayParser) level(d int) error {
	if d >= maxArrayDims {
		return p.errorf("more than %d dimensions", maxArrayDims)
	}
	p.pos++ // '{'
	n := 0
	for {
		if p.pos >= len(p.s) {
			return p.errorf("no closing brace")
		}
		if p.s[p.pos] == '{' {
			if p.depth != 0 && d+1 >= p.depth {
				return p.errorf("sub-array where an element belongs")
			}
			if err := p.level(d + 1); err != nil {
				return err
			}
		} else {
			if p.depth == 0 {
				p.depth = d + 1
				p.dims = make([]int, p.depth)
				for i := range p.dims {
					p.dims[i] = -1
				}
			} else if d+1 != p.depth {
				return p.errorf("element where a sub-array belongs")
			}
			if err := p.element(); err != nil {
				return err
			}
		}
		n++
		if p.pos >= len(p.s) {
			return p.errorf("no closing brace")
		}
		switch p.s[p.pos] {
		case p.delim:
			p.pos++
			continue
		case '}':
			p.pos++
		default:
			return p.errorf("unexpected %q", p.s[p.pos])
		}
		break
	}
	if p.dims[d] == -1 {
		p.dims[d] = n
	} else if p.dims[d] != n {
		return p.errorf("sub-arrays of different lengths (%d and %d)", p.dims[d], n)
	}
	return nil
}

// element reads one element, quoted or not.
func (p *arrayParser) element() error {
	if p.s[p.pos] == '"' {
		p.pos++
		out := []byte{}
		for {
			if p.pos >= len(p.s) {
				return p.errorf("unterminated quoted element")
			}
			c := p.s[p.pos]
			p.pos++
			switch c {
			case '"':
				p.elems = append(p.elems, out)
				return nil
			case '\\':
				if p.pos >= len(p.s) {
					return p.errorf("backslash at the end")
				}
				out = append(out, p.s[p.pos])
				p.pos++
			default:
				out = append(out, c)
			}
		}
	}
	start := p.pos
	var out []byte
	escaped := false
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == p.delim || c == '}' {
			break
		}
		switch c {
		case '{', '"':
			return p.errorf("unexpected %q in an unquoted element", c)
		case ' ', '\t', '\n', '\r', '\v', '\f':
			return p.errorf("white space in an unquoted element")
		case '\\':
			if p.pos+1 >= len(p.s) {
				return p.errorf("backslash at the end")
			}
			if out == nil {
				out = append([]byte{}, p.s[start:p.pos]...)
			}
			escaped = true
			p.pos++
			out = append(out, p.s[p.pos])
			p.pos++
			continue
		}
		if out != nil {
			out = append(out, c)
		}
		p.pos++
	}
	if out == nil {
		out = p.s[start:p.pos]
	}
	if len(out) == 0 && !escaped {
		return p.errorf("empty unquoted element")
	}
	if !escaped && bytes.EqualFold(out, []byte("NULL")) {
		p.elems = append(p.elems, nil)
		return nil
	}
	p.elems = append(p.elems, out)
	return nil
}

// listDepth counts the list levels of t and returns the innermost
// non-list type.
func listDepth(t *arrow.ListType) (int, arrow.DataType) {
	n := 1
	inner := t.Elem()
	for {
		l, ok := inner.(*arrow.ListType)
		if !ok {
			return n, inner
		}
		n++
		inner = l.Elem()
	}
}

// hasUnquotedColon reports whether ':' separates elements of an array's
// text: binary elements are bytea, always quoted (they hold a backslash)
// and ','-separated, or PostGIS hex EWKB, never quoted and ':'-separated.
func hasUnquotedColon(text []byte) bool {
	quoted := false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ':' && !quoted:
			return true
		}
	}
	return false
}

// decodeList reads an array into nested []any, one list level per
// dimension. An array with fewer dimensions than list levels holds its
// inner levels as elements (an array of a domain over an array); one with
// more dimensions than list levels, or lower bounds other than 1, is
// refused: a list has neither.
func decodeList(t *arrow.ListType, text []byte) (any, error) {
	depth, leaf := listDepth(t)
	delim := byte(',')
	if _, ok := leaf.(*arrow.BinaryType); ok && hasUnquotedColon(text) {
		delim = ':'
	}
	a, err := ParseArray(text, delim)
	if err != nil {
		return nil, err
	}
	for i, l := range a.Lower {
		if l != 1 {
			return nil, fmt.Errorf("dimension %d starts at %d; a list keeps only arrays whose dimensions start at 1", i+1, l)
		}
	}
	if len(a.Dims) > depth {
		return nil, fmt.Errorf("array has %d dimensions, more than the %d the column declares (declare it as %s)", len(a.Dims), depth, declared(len(a.Dims)))
	}
	if len(a.Dims) == 0 {
		return []any{}, nil
	}
	next := 0
	var build func(lt *arrow.ListType, d int) (any, error)
	build = func(lt *arrow.ListType, d int) (any, error) {
		out := make([]any, a.Dims[d])
		for i := range out {
			if d+1 < len(a.Dims) {
				v, err := build(lt.Elem().(*arrow.ListType), d+1)
				if err != nil {
					return nil, err
				}
				out[i] = v
				continue
			}
			e := a.Elements[next]
			next++
			if e == nil {
				continue
			}
			if _, isList := lt.Elem().(*arrow.ListType); isList && (len(e) == 0 || (e[0] != '{' && e[0] != '[')) {
				return nil, fmt.Errorf("array has %d dimension(s) where the column declares %d", len(a.Dims), depth)
			}
			v, err := decodeValue(lt.Elem(), e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", next, err)
			}
			out[i] = v
		}
		return out, nil
	}
	return build(t, 0)
}

func declared(dims int) string {
	s := "type"
	for range dims {
		s += "[]"
	}
	return s
}
