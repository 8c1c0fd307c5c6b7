package mapping

import (
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Built-in PostgreSQL type OIDs (pg_type.dat).
const (
	OIDBool        = 16
	OIDBytea       = 17
	OIDName        = 19
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDOID         = 26
	OIDJSON        = 114
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDBPChar      = 1042
	OIDVarchar     = 1043
	OIDDate        = 1082
	OIDTime        = 1083
	OIDTimestamp   = 1114
	OIDTimestampTZ = 1184
	OIDInterval    = 1186
	OIDTimeTZ      = 1266
	OIDNumeric     = 1700
	OIDUUID        = 2950
	OIDJSONB       = 3802
)

// Column is what mapping needs to know about a source column: decode's
// description of it, read here: its OID, type modifier and TypeName (as
// format_type prints it, for messages), the catalog's Type (replication's
// preflight; without it only built-in types are known, see Builtin, and
// arrays count as one-dimensional) and the configuration's Rule, which
// when set replaces the default mapping (see Overrides).
type Column = decode.Column

// UnsupportedTypeError reports a column whose type has no mapping.
type UnsupportedTypeError struct {
	Table, Column string
	OID           uint32
	TypeName      string
	// Detail says which part of the type has no mapping when that is not
	// the column's type itself (an element, a field, a domain's base).
	Detail string
	// Fix, when the caller knows the publication (a preflight check), is
	// the statement that leaves the column out of it.
	Fix string
}

func (e *UnsupportedTypeError) Error() string {
	name := e.TypeName
	if name == "" {
		name = fmt.Sprintf("oid %d", e.OID)
	}
	detail := ""
	if e.Detail != "" {
		detail = " (" + e.Detail + ")"
	}
	rule := fmt.Sprintf("exclude it with a rule in the --config file, rules: [{column: %s.%s, to: exclude}], or map it to its text form (see docs/type-mapping.md)", e.Table, e.Column)
	if e.Fix == "" {
		return fmt.Sprintf("%s.%s: type %s has no Iceberg mapping%s; leave the column out of the publication with a column list, or %s", e.Table, e.Column, name, detail, rule)
	}
	return fmt.Sprintf("%s.%s: type %s has no Iceberg mapping%s; leave the column out of the publication with a column list:\n  %s\nor %s", e.Table, e.Column, name, detail, e.Fix, rule)
}

// MaxDecimalPrecision is the largest decimal precision Iceberg supports.
const MaxDecimalPrecision = 38

// NumericTypmod splits a numeric atttypmod into precision and scale;
// ok is false for an unconstrained numeric.
func NumericTypmod(typmod int32) (precision, scale int, ok bool) {
	if typmod < 4 {
		return 0, 0, false
	}
	t := typmod - 4
	precision = int(t>>16) & 0xffff
	// The scale is an 11-bit signed field (PostgreSQL 15 allows negative scales).
	scale = int(t & 0x7ff)
	if scale&0x400 != 0 {
		scale -= 0x800
	}
	return precision, scale, true
}

// IntervalType is the Iceberg type of an interval: PostgreSQL's own three
// fields, which no single Iceberg type holds (a month or a day has no fixed
// length).
func IntervalType() *iceberg.StructType {
	return &iceberg.StructType{FieldList: []iceberg.NestedField{
		{Name: "months", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{Name: "days", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{Name: "micros", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	}}
}

// HstoreType is the Iceberg type of an hstore.
func HstoreType() *iceberg.MapType {
	return &iceberg.MapType{KeyType: iceberg.PrimitiveTypes.String, ValueType: iceberg.PrimitiveTypes.String}
}

// For returns the Iceberg type of a column of table (schema.name). Nested
// types (list, struct, map) come with field IDs 0, for the caller to assign.
func For(table string, c Column) (iceberg.Type, error) {
	if c.Rule != nil {
		return forOverride(table, c, c.Rule)
	}
	t := c.Type
	if t == nil {
		t = Builtin(c.TypeOID, c.TypeMod)
	}
	name := c.TypeName
	if name == "" && t != nil {
		name = t.Display()
	}
	if t == nil {
		return nil, &UnsupportedTypeError{Table: table, Column: c.Name, OID: c.TypeOID, TypeName: name}
	}
	typ, err := forType(t, 0)
	if err != nil {
		var u *unsupported
		if !errors.As(err, &u) {
			return nil, err
		}
		e := &UnsupportedTypeError{Table: table, Column: c.Name, OID: c.TypeOID, TypeName: name}
		switch {
		case u.path != "" && u.reason != "":
			e.Detail = fmt.Sprintf("%s has type %s: %s", u.path, u.t.Display(), u.reason)
		case u.path != "":
			e.Detail = fmt.Sprintf("%s has type %s", u.path, u.t.Display())
		default:
			e.Detail = u.reason
		}
		return nil, e
	}
	return typ, nil
}

// unsupported is a part of a type without a mapping; path says where.
type unsupported struct {
	t      *Type
	path   string
	reason string
}

func (u *unsupported) Error() string {
	return fmt.Sprintf("%s has type %s: %s", u.path, u.t.Display(), u.reason)
}

// within prefixes the path of an unsupported part found inside t.
func within(err error, step string) error {
	var u *unsupported
	if errors.As(err, &u) {
		if u.path == "" {
			u.path = step
		} else {
			u.path = step + "." + u.path
		}
	}
	return err
}

// maxTypeDepth bounds how deeply types nest (composites of arrays of
// domains ...); PostgreSQL forbids cycles, so this only stops a bad catalog
// description.
const maxTypeDepth = 32

func forType(t *Type, depth int) (iceberg.Type, error) {
	if depth > maxTypeDepth {
		return nil, &unsupported{t: t, reason: fmt.Sprintf("nested more than %d levels deep", maxTypeDepth)}
	}
	for i := range rules {
		if rules[i].match(t) {
			return rules[i].to(t, depth)
		}
	}
	return nil, &unsupported{t: t}
}

// Rule is one line of the default type mapping: what it matches, the
// Iceberg type it gives, and the notes docs/type-mapping.md shows.
type Rule struct {
	Postgres string // the PostgreSQL types it matches
	Iceberg  string // the Iceberg type they become
	Notes    string
	match    func(t *Type) bool
	to       func(t *Type, depth int) (iceberg.Type, error)
}

// Rules returns the default mapping, in the order For tries it.
func Rules() []Rule { return slices.Clone(rules) }

// RuleFor returns the index in Rules of the rule For applies to t itself
// (for a domain or an array, the rule for the domain or the array).
func RuleFor(t *Type) (int, bool) {
	for i := range rules {
		if rules[i].match(t) {
			return i, true
		}
	}
	return 0, false
}

// builtinNamed matches built-in base types by typname.
func builtinNamed(names ...string) func(t *Type) bool {
	return func(t *Type) bool {
		return t.Kind == KindBase && t.Schema == "pg_catalog" && t.Extension == "" && slices.Contains(names, t.Name)
	}
}

// extensionNamed matches the base types an extension creates.
func extensionNamed(ext string, names ...string) func(t *Type) bool {
	return func(t *Type) bool {
		return t.Kind == KindBase && t.Extension == ext && slices.Contains(names, t.Name)
	}
}

func kindIs(k Kind) func(t *Type) bool { return func(t *Type) bool { return t.Kind == k } }

func is(typ iceberg.Type) func(*Type, int) (iceberg.Type, error) {
	return func(*Type, int) (iceberg.Type, error) { return typ, nil }
}

// numeric(p,s) typmod cases.
func numericWith(cond func(p, s int) bool) func(t *Type) bool {
	named := builtinNamed("numeric")
	return func(t *Type) bool {
		if !named(t) {
			return false
		}
		p, s, ok := NumericTypmod(t.Mod)
		return ok && cond(p, s)
	}
}

func numericDecimal(toPrecision, toScale func(p, s int) int) func(t *Type, _ int) (iceberg.Type, error) {
	return func(t *Type, _ int) (iceberg.Type, error) {
		p, s, _ := NumericTypmod(t.Mod)
		return iceberg.DecimalTypeOf(toPrecision(p, s), toScale(p, s)), nil
	}
}

var (
	str = iceberg.PrimitiveTypes.String
	bin = iceberg.PrimitiveTypes.Binary
)

// rules is the default mapping. For takes the first rule that matches.
// (Set in init: the rules for domains, composites and arrays call forType,
// which reads rules.)
var rules []Rule

func init() { rules = defaultRules() }

func defaultRules() []Rule {
	return []Rule{
		{Postgres: "`boolean`", Iceberg: "`boolean`", match: builtinNamed("bool"), to: is(iceberg.PrimitiveTypes.Bool)},
		{Postgres: "`smallint`, `integer`", Iceberg: "`int`", match: builtinNamed("int2", "int4"), to: is(iceberg.PrimitiveTypes.Int32)},
		{Postgres: "`bigint`", Iceberg: "`long`", match: builtinNamed("int8"), to: is(iceberg.PrimitiveTypes.Int64)},
		{Postgres: "`oid`", Iceberg: "`long`", Notes: "unsigned 32-bit, so it fits a long", match: builtinNamed("oid"), to: is(iceberg.PrimitiveTypes.Int64)},
		{Postgres: "`real`", Iceberg: "`float`", Notes: "`NaN`, `Infinity`, `-Infinity` and `-0` kept", match: builtinNamed("float4"), to: is(iceberg.PrimitiveTypes.Float32)},
		{Postgres: "`double precision`", Iceberg: "`double`", Notes: "`NaN`, `Infinity`, `-Infinity` and `-0` kept", match: builtinNamed("float8"), to: is(iceberg.PrimitiveTypes.Float64)},
		{
			Postgres: "`numeric(p,s)`, p ≤ 38, 0 ≤ s ≤ p", Iceberg: "`decimal(p,s)`",
			Notes: "`NaN`, `Infinity`, `-Infinity` refused (see [edge values](#edge-values))",
			match: numericWith(func(p, s int) bool { return p >= 1 && p <= MaxDecimalPrecision && s >= 0 && s <= p }),
			to:    numericDecimal(func(p, _ int) int { return p }, func(_, s int) int { return s }),
		},
		{
			Postgres: "`numeric(p,s)`, s < 0, p − s ≤ 38", Iceberg: "`decimal(p−s,0)`",
			Notes: "a negative scale rounds to tens, hundreds, ...: the values are integers of up to p − s digits",
			match: numericWith(func(p, s int) bool { return s < 0 && p-s <= MaxDecimalPrecision }),
			to:    numericDecimal(func(p, s int) int { return p - s }, func(int, int) int { return 0 }),
		},
		{
			Postgres: "`numeric(p,s)`, s > p, s ≤ 38", Iceberg: "`decimal(s,s)`",
			Notes: "the values are below 10^(p−s) with s digits after the point",
			match: numericWith(func(p, s int) bool { return s > p && s <= MaxDecimalPrecision }),
			to:    numericDecimal(func(_, s int) int { return s }, func(_, s int) int { return s }),
		},
		{
			Postgres: "`numeric` without typmod, or wider than the rows above", Iceberg: "`string`",
			Notes: "Postgres's exact text, such as `123.4500`, `NaN` or `-Infinity`",
			match: builtinNamed("numeric"), to: is(str),
		},
		{Postgres: "`money`", Iceberg: "`string`", Notes: "the text Postgres prints, which depends on the source's `lc_monetary` (such as `$1,234.56`); a decimal would need that locale to parse", match: builtinNamed("money"), to: is(str)},
		{Postgres: "`text`, `varchar(n)`, `char(n)`, `name`, `\"char\"`", Iceberg: "`string`", Notes: "`char(n)` keeps its trailing blanks, as Postgres prints them", match: builtinNamed("text", "varchar", "bpchar", "name", "char"), to: is(str)},
		{Postgres: "`citext` (extension)", Iceberg: "`string`", Notes: "the value as stored; comparisons in Iceberg engines are case-sensitive", match: extensionNamed("citext", "citext"), to: is(str)},
		{Postgres: "`bytea`", Iceberg: "`binary`", match: builtinNamed("bytea"), to: is(bin)},
		{Postgres: "`uuid`", Iceberg: "`uuid`", match: builtinNamed("uuid"), to: is(iceberg.PrimitiveTypes.UUID)},
		{Postgres: "`date`", Iceberg: "`date`", Notes: "BC dates kept; `±infinity` refused", match: builtinNamed("date"), to: is(iceberg.PrimitiveTypes.Date)},
		{Postgres: "`time`", Iceberg: "`time`", Notes: "microseconds; `24:00:00` refused", match: builtinNamed("time"), to: is(iceberg.PrimitiveTypes.Time)},
		{Postgres: "`timetz`", Iceberg: "`string`", Notes: "Postgres's text with its offset, such as `12:34:56.789+05:30`: Iceberg's time has no offset", match: builtinNamed("timetz"), to: is(str)},
		{Postgres: "`timestamp`", Iceberg: "`timestamp`", Notes: "microseconds; BC values kept; refused: `±infinity`, and values after 294247-01-10 04:00:54.775807, where Iceberg's range ends (PostgreSQL's goes on to 294276)", match: builtinNamed("timestamp"), to: is(iceberg.PrimitiveTypes.Timestamp)},
		{Postgres: "`timestamptz`", Iceberg: "`timestamptz`", Notes: "microseconds, UTC; as `timestamp`", match: builtinNamed("timestamptz"), to: is(iceberg.PrimitiveTypes.TimestampTz)},
		{
			Postgres: "`interval`", Iceberg: "`struct<months: int, days: int, micros: long>`",
			Notes: "Postgres's own three fields, all required; PostgreSQL 17's `infinity` is (2147483647, 2147483647, 9223372036854775807) and `-infinity` the minimums, as Postgres stores them",
			match: builtinNamed("interval"), to: func(*Type, int) (iceberg.Type, error) { return IntervalType(), nil },
		},
		{Postgres: "`json`, `jsonb`, `jsonpath`", Iceberg: "`string`", Notes: "the text Postgres prints (`json` verbatim, `jsonb` normalised)", match: builtinNamed("json", "jsonb", "jsonpath"), to: is(str)},
		{Postgres: "`xml`", Iceberg: "`string`", match: builtinNamed("xml"), to: is(str)},
		{Postgres: "`inet`, `cidr`, `macaddr`, `macaddr8`", Iceberg: "`string`", Notes: "Postgres's text, such as `192.168.0.1/24` or `08:00:2b:01:02:03`", match: builtinNamed("inet", "cidr", "macaddr", "macaddr8"), to: is(str)},
		{Postgres: "`bit(n)`, `bit varying(n)`", Iceberg: "`string`", Notes: "the bits as `0`/`1` characters, so the length is kept", match: builtinNamed("bit", "varbit"), to: is(str)},
		{Postgres: "`tsvector`, `tsquery`", Iceberg: "`string`", match: builtinNamed("tsvector", "tsquery"), to: is(str)},
		{Postgres: "`pg_lsn`", Iceberg: "`string`", Notes: "such as `16/B374D848`", match: builtinNamed("pg_lsn"), to: is(str)},
		{Postgres: "`hstore` (extension)", Iceberg: "`map<string, string>`", Notes: "values may be null", match: extensionNamed("hstore", "hstore"), to: func(*Type, int) (iceberg.Type, error) { return HstoreType(), nil }},
		{
			Postgres: "`geometry`, `geography` (PostGIS)", Iceberg: "`binary`",
			Notes: "PostGIS's EWKB, the bytes of its hex text form: OGC WKB, plus the SRID and Z/M flags when the value has them",
			match: extensionNamed("postgis", "geometry", "geography"), to: is(bin),
		},
		{Postgres: "enum types", Iceberg: "`string`", Notes: "the label; labels added later need nothing", match: kindIs(KindEnum), to: is(str)},
		{Postgres: "range types", Iceberg: "`string`", Notes: "Postgres's text, such as `[1,10)`, `empty` or `[\"2024-01-01 00:00:00+00\",)`", match: kindIs(KindRange), to: is(str)},
		{Postgres: "multirange types", Iceberg: "`string`", Notes: "Postgres's text, such as `{[1,3), [5,7)}`", match: kindIs(KindMultirange), to: is(str)},
		{
			Postgres: "domains", Iceberg: "the base type's", Notes: "over scalars, arrays and composites; the domain's constraints are not carried",
			match: kindIs(KindDomain),
			to: func(t *Type, depth int) (iceberg.Type, error) {
				if t.Base == nil {
					return nil, &unsupported{t: t, reason: "no base type described"}
				}
				typ, err := forType(t.Base, depth+1)
				return typ, within(err, "base")
			},
		},
		{
			Postgres: "composite types", Iceberg: "`struct<...>`", Notes: "one optional field per attribute, mapped by these rules; nested composites nest",
			match: kindIs(KindComposite), to: compositeType,
		},
		{
			Postgres: "arrays `t[]`, `t[][]`, ...", Iceberg: "`list<t>`, `list<list<t>>`, ...",
			Notes: "one list level per declared dimension; elements optional (NULL elements kept); see [arrays](#arrays)",
			match: kindIs(KindArray), to: arrayType,
		},
	}
}

func compositeType(t *Type, depth int) (iceberg.Type, error) {
	if len(t.Fields) == 0 {
		return nil, &unsupported{t: t, reason: "a composite type without attributes has no Iceberg struct"}
	}
	fields := make([]iceberg.NestedField, len(t.Fields))
	for i, f := range t.Fields {
		ft, err := forType(f.Type, depth+1)
		if err != nil {
			return nil, within(err, "field "+f.Name)
		}
		fields[i] = iceberg.NestedField{Name: f.Name, Type: ft}
	}
	return &iceberg.StructType{FieldList: fields}, nil
}

func arrayType(t *Type, depth int) (iceberg.Type, error) {
	if t.Elem == nil {
		return nil, &unsupported{t: t, reason: "no element type described"}
	}
	elem, err := forType(t.Elem, depth+1)
	if err != nil {
		return nil, within(err, "element")
	}
	// Append reads elements separated by commas, and by ':' in arrays of
	// binary values (PostGIS types); no other delimiter can be told apart.
	if t.Delim != ',' && !(t.Delim == ':' && elem.Equals(bin)) {
		return nil, &unsupported{t: t, reason: fmt.Sprintf("its elements are separated by %q, which is not supported", t.Delim)}
	}
	var typ iceberg.Type = elem
	for range max(t.Dims, 1) {
		typ = &iceberg.ListType{Element: typ}
	}
	return typ, nil
}

// SameType reports whether two Iceberg types are the same, ignoring field
// IDs: For returns nested types with IDs 0, a table's schema has them
// assigned.
func SameType(a, b iceberg.Type) bool {
	switch a := a.(type) {
	case *iceberg.StructType:
		b, ok := b.(*iceberg.StructType)
		if !ok || len(a.FieldList) != len(b.FieldList) {
			return false
		}
		for i, f := range a.FieldList {
			g := b.FieldList[i]
			if f.Name != g.Name || f.Required != g.Required || !SameType(f.Type, g.Type) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		b, ok := b.(*iceberg.ListType)
		return ok && a.ElementRequired == b.ElementRequired && SameType(a.Element, b.Element)
	case *iceberg.MapType:
		b, ok := b.(*iceberg.MapType)
		return ok && a.ValueRequired == b.ValueRequired && SameType(a.KeyType, b.KeyType) && SameType(a.ValueType, b.ValueType)
	}
	return a.Equals(b)
}
