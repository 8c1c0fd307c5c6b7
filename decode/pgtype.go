package decode

import "strings"

// TypeKind says what kind of PostgreSQL type a Type is: pg_type.typtype,
// with arrays (base types whose input function is array_in) told apart.
type TypeKind byte

// Type kinds.
const (
	KindBase       TypeKind = 'b'
	KindArray      TypeKind = 'A'
	KindComposite  TypeKind = 'c'
	KindDomain     TypeKind = 'd'
	KindEnum       TypeKind = 'e'
	KindRange      TypeKind = 'r'
	KindMultirange TypeKind = 'm'
	KindPseudo     TypeKind = 'p'
)

// Type describes a PostgreSQL type as the catalog does, resolved as far as
// mapping needs: element types of arrays, base types of domains and the
// attributes of composite types. It is plain data, what the source's
// catalog says: replication's preflight builds it from pg_type and
// pg_attribute, mapping.Builtin for built-in types from the OID alone, and
// package mapping decides from it what the column becomes in Iceberg. A
// Type is a tree: the same catalog type used with two type modifiers is
// two Types.
type Type struct {
	OID    uint32
	Schema string // namespace, e.g. pg_catalog
	Name   string // pg_type.typname, e.g. int4, _int4, mood
	// Extension is the extension that owns the type (hstore, citext,
	// postgis), "" for none.
	Extension string
	Kind      TypeKind
	// Mod is the type modifier that applies here: the column's atttypmod,
	// a domain's typtypmod, or, for an array's element, the array's. -1 for
	// none.
	Mod int32

	// Elem is an array's element type, Delim the element type's typdelim
	// (the character between elements in the array's text form) and Dims
	// the declared number of dimensions (attndims or, for a domain over an
	// array, typndims); 0 counts as 1.
	Elem  *Type
	Delim byte
	Dims  int

	// Base is a domain's base type.
	Base *Type

	// Fields are a composite type's attributes, dropped ones left out, in
	// attnum order (record_out's order).
	Fields []Field
}

// Field is an attribute of a composite type.
type Field struct {
	Name string
	Type *Type
}

// Display names the type for messages: format_type's names for built-in
// types where known, schema-qualified names for others, [] for arrays.
func (t *Type) Display() string {
	if t == nil {
		return "(unknown type)"
	}
	if t.Kind == KindArray && t.Elem != nil {
		return t.Elem.Display() + strings.Repeat("[]", max(t.Dims, 1))
	}
	if t.Schema == "pg_catalog" || t.Schema == "" {
		if n, ok := sqlNames[t.Name]; ok {
			return n
		}
		return t.Name
	}
	if t.Schema == "public" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// sqlNames are format_type's names of built-in types whose typname differs.
var sqlNames = map[string]string{
	"bool": "boolean", "int2": "smallint", "int4": "integer", "int8": "bigint",
	"float4": "real", "float8": "double precision", "varchar": "character varying",
	"bpchar": "character", "char": `"char"`, "timestamp": "timestamp without time zone",
	"timestamptz": "timestamp with time zone", "time": "time without time zone",
	"timetz": "time with time zone", "varbit": "bit varying",
}
