package history

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	icego "github.com/apache/iceberg-go"
)

// The --where language: a small filter pushed into iceberg-go's scan
// (files and row groups are pruned by their statistics, rows filtered).
//
//	expr  := and ("or" and)*
//	and   := unary ("and" unary)*
//	unary := "not" unary | "(" expr ")" | pred
//	pred  := column op literal
//	       | column "is" ["not"] "null"
//	       | column ["not"] "in" "(" literal ("," literal)* ")"
//	       | column ["not"] "like" 'prefix%'
//	op    := = | != | <> | < | <= | > | >=
//	literal := 'text' ('' inside is a quote) | a number | true | false
//
// Keywords are case-insensitive; a column name is a word of letters,
// digits and _, or "double quoted". A literal is taken as the column's
// type when the filter is bound to the table's schema (ParseWhere's
// caller, via Bind): '2026-12-01' compares with a date, 12.50 with a
// decimal.

// Filter is a parsed --where expression and the columns it names.
type Filter struct {
	Expr    icego.BooleanExpression // unbound
	Columns []string
	text    string
}

// ParseWhere parses a --where expression.
func ParseWhere(s string) (*Filter, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", s, err)
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err == nil && !p.at(tokEOF) {
		err = fmt.Errorf("unexpected %s at offset %d: join conditions with and / or", p.peek(), p.peek().pos)
	}
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", s, err)
	}
	return &Filter{Expr: e, Columns: p.cols, text: s}, nil
}

// Bind checks f against schema: every column exists and every literal
// converts to its column's type.
func (f *Filter) Bind(schema *icego.Schema) error {
	var missing []string
	for _, c := range f.Columns {
		if _, ok := schema.FindFieldByName(c); !ok && !slices.Contains(missing, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--where %q: no column %s (the columns: %s)", f.text, strings.Join(missing, ", "), strings.Join(fieldNames(schema), ", "))
	}
	if _, err := icego.BindExpr(schema, f.Expr, true); err != nil {
		return fmt.Errorf("--where %q: %w", f.text, err)
	}
	return nil
}

func fieldNames(schema *icego.Schema) []string {
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	return names
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted // "column"
	tokString
	tokNumber
	tokOp
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokString:
		return fmt.Sprintf("'%s'", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

func (t token) is(word string) bool { return t.kind == tokWord && strings.EqualFold(t.text, word) }

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')' || c == ',':
			k := map[rune]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma}[c]
			out = append(out, token{k, string(c), i})
			i++
		case c == '\'' || c == '"':
			text, n, ok := quoted(s[i:], byte(c))
			if !ok {
				return nil, fmt.Errorf("the quote at offset %d is not closed", i)
			}
			k := tokString
			if c == '"' {
				k = tokQuoted
			}
			out = append(out, token{k, text, i})
			i += n
		case strings.ContainsRune("=!<>", c):
			op := string(c)
			if i+1 < len(s) && slices.Contains([]string{"<=", ">=", "!=", "<>"}, s[i:i+2]) {
				op = s[i : i+2]
			}
			if op == "!" {
				return nil, fmt.Errorf("'!' at offset %d: write != for not equal", i)
			}
			out = append(out, token{tokOp, op, i})
			i += len(op)
		case c == '-' || c == '+' || c == '.' || unicode.IsDigit(c):
			j := i + 1
			for j < len(s) && (unicode.IsDigit(rune(s[j])) || strings.ContainsRune(".eE", rune(s[j])) || (strings.ContainsRune("+-", rune(s[j])) && strings.ContainsRune("eE", rune(s[j-1])))) {
				j++
			}
			out = append(out, token{tokNumber, s[i:j], i})
			i = j
		case c == '_' || unicode.IsLetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, token{tokWord, s[i:j], i})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d", c, i)
		}
	}
	return append(out, token{kind: tokEOF, pos: len(s)}), nil
}

// quoted reads a quoted text at the start of s (the quote doubled inside
// stands for itself): the text, the bytes read, and whether it closed.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

type parser struct {
	toks []token
	i    int
	cols []string // the columns named, in order
}

func (p *parser) peek() token       { return p.toks[p.i] }
func (p *parser) at(k tokKind) bool { return p.peek().kind == k }
func (p *parser) next() token       { t := p.toks[p.i]; p.i = min(p.i+1, len(p.toks)-1); return t }
func (p *parser) accept(w string) bool {
	ok := p.peek().is(w)
	p.i += map[bool]int{true: 1}[ok]
	return ok
}

func (p *parser) or() (icego.BooleanExpression, error) {
	left, err := p.and()
	for err == nil && p.accept("or") {
		var right icego.BooleanExpression
		if right, err = p.and(); err == nil {
			left = icego.NewOr(left, right)
		}
	}
	return left, err
}

func (p *parser) and() (icego.BooleanExpression, error) {
	left, err := p.unary()
	for err == nil && p.accept("and") {
		var right icego.BooleanExpression
		if right, err = p.unary(); err == nil {
			left = icego.NewAnd(left, right)
		}
	}
	return left, err
}

func (p *parser) unary() (icego.BooleanExpression, error) {
	if p.accept("not") {
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return icego.NewNot(e), nil
	}
	if p.at(tokLParen) {
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.at(tokRParen) {
			return nil, fmt.Errorf("expected ) at offset %d, found %s", p.peek().pos, p.peek())
		}
		p.next()
		return e, nil
	}
	return p.pred()
}

func (p *parser) pred() (icego.BooleanExpression, error) {
	col := p.next()
	if col.kind != tokWord && col.kind != tokQuoted {
		return nil, fmt.Errorf("expected a column name at offset %d, found %s", col.pos, col)
	}
	if col.kind == tokWord && isKeyword(col.text) {
		return nil, fmt.Errorf("expected a column name at offset %d, found the keyword %s (quote a column of that name: \"%s\")", col.pos, col, col.text)
	}
	ref := icego.Reference(col.text)
	p.cols = append(p.cols, col.text)
	t := p.next()
	switch {
	case t.kind == tokOp:
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		op := map[string]icego.Operation{"=": icego.OpEQ, "!=": icego.OpNEQ, "<>": icego.OpNEQ, "<": icego.OpLT, "<=": icego.OpLTEQ, ">": icego.OpGT, ">=": icego.OpGTEQ}[t.text]
		return icego.LiteralPredicate(op, ref, lit), nil
	case t.is("is"):
		not := p.accept("not")
		if !p.accept("null") {
			return nil, fmt.Errorf("expected null after is at offset %d, found %s", p.peek().pos, p.peek())
		}
		if not {
			return icego.NotNull(ref), nil
		}
		return icego.IsNull(ref), nil
	case t.is("not") || t.is("in") || t.is("like"):
		not := t.is("not")
		if not {
			t = p.next()
		}
		if t.is("like") {
			return p.like(ref, not)
		}
		if !t.is("in") {
			return nil, fmt.Errorf("expected in or like after not at offset %d, found %s", t.pos, t)
		}
		lits, err := p.list()
		if err != nil {
			return nil, err
		}
		if not {
			return icego.SetPredicate(icego.OpNotIn, ref, lits), nil
		}
		return icego.SetPredicate(icego.OpIn, ref, lits), nil
	}
	return nil, fmt.Errorf("expected an operator (= != < <= > >=, is null, in, like) after %s at offset %d, found %s", col, t.pos, t)
}

// like takes a prefix pattern only ('abc%'): what Iceberg can push down.
func (p *parser) like(ref icego.Reference, not bool) (icego.BooleanExpression, error) {
	t := p.next()
	prefix, ok := strings.CutSuffix(t.text, "%")
	if t.kind != tokString || !ok || strings.ContainsAny(prefix, "%_") {
		return nil, fmt.Errorf("like at offset %d takes a prefix pattern such as 'abc%%' (no other %% or _), found %s", t.pos, t)
	}
	op := icego.OpStartsWith
	if not {
		op = icego.OpNotStartsWith
	}
	return icego.LiteralPredicate(op, ref, icego.StringLiteral(prefix)), nil
}

func (p *parser) list() ([]icego.Literal, error) {
	if !p.at(tokLParen) {
		return nil, fmt.Errorf("expected ( after in at offset %d, found %s", p.peek().pos, p.peek())
	}
	p.next()
	var lits []icego.Literal
	for {
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		lits = append(lits, lit)
		if t := p.next(); t.kind == tokRParen {
			return lits, nil
		} else if t.kind != tokComma {
			return nil, fmt.Errorf("expected , or ) in the list at offset %d, found %s", t.pos, t)
		}
	}
}

// literal reads a literal as text: binding converts it to the column's
// type (iceberg-go's string literal converts to every primitive type).
func (p *parser) literal() (icego.Literal, error) {
	t := p.next()
	switch {
	case t.kind == tokString, t.kind == tokNumber:
		return icego.StringLiteral(t.text), nil
	case t.is("true"), t.is("false"):
		return icego.StringLiteral(strings.ToLower(t.text)), nil
	case t.is("null"):
		return nil, fmt.Errorf("null at offset %d: compare with is null or is not null", t.pos)
	}
	return nil, fmt.Errorf("expected a literal ('text', a number, true or false) at offset %d, found %s", t.pos, t)
}

func isKeyword(w string) bool {
	switch strings.ToLower(w) {
	case "and", "or", "not", "is", "null", "in", "like", "true", "false":
		return true
	}
	return false
}
