package mapping

import "github.com/pg2iceberg/pg2iceberg/decode"

// The catalog's description of a type is the source's vocabulary, plain
// data that decode.Column carries; mapping reads it under its own names.

// Kind says what kind of PostgreSQL type a Type is (see decode.TypeKind).
type Kind = decode.TypeKind

// Type kinds.
const (
	KindBase       = decode.KindBase
	KindArray      = decode.KindArray
	KindComposite  = decode.KindComposite
	KindDomain     = decode.KindDomain
	KindEnum       = decode.KindEnum
	KindRange      = decode.KindRange
	KindMultirange = decode.KindMultirange
	KindPseudo     = decode.KindPseudo
)

// Type describes a PostgreSQL type as the catalog does (see decode.Type).
type Type = decode.Type

// Field is an attribute of a composite type.
type Field = decode.Field

// builtin is a built-in type of pg_type.dat.
type builtin struct {
	name string
	kind Kind
	elem uint32 // arrays: the element type
}

// builtins are the built-in types mapping knows by OID, and their arrays.
// Their OIDs are fixed (pg_type.dat); integration tests check each against
// a live catalog.
var builtins = map[uint32]builtin{
	16: {"bool", KindBase, 0}, 17: {"bytea", KindBase, 0}, 18: {"char", KindBase, 0},
	19: {"name", KindBase, 0}, 20: {"int8", KindBase, 0}, 21: {"int2", KindBase, 0},
	23: {"int4", KindBase, 0}, 25: {"text", KindBase, 0}, 26: {"oid", KindBase, 0},
	114: {"json", KindBase, 0}, 142: {"xml", KindBase, 0}, 650: {"cidr", KindBase, 0},
	700: {"float4", KindBase, 0}, 701: {"float8", KindBase, 0}, 774: {"macaddr8", KindBase, 0},
	790: {"money", KindBase, 0}, 829: {"macaddr", KindBase, 0}, 869: {"inet", KindBase, 0},
	1042: {"bpchar", KindBase, 0}, 1043: {"varchar", KindBase, 0}, 1082: {"date", KindBase, 0},
	1083: {"time", KindBase, 0}, 1114: {"timestamp", KindBase, 0}, 1184: {"timestamptz", KindBase, 0},
	1186: {"interval", KindBase, 0}, 1266: {"timetz", KindBase, 0}, 1560: {"bit", KindBase, 0},
	1562: {"varbit", KindBase, 0}, 1700: {"numeric", KindBase, 0}, 2950: {"uuid", KindBase, 0},
	3220: {"pg_lsn", KindBase, 0}, 3614: {"tsvector", KindBase, 0}, 3615: {"tsquery", KindBase, 0},
	3802: {"jsonb", KindBase, 0}, 4072: {"jsonpath", KindBase, 0},

	3904: {"int4range", KindRange, 0}, 3906: {"numrange", KindRange, 0}, 3908: {"tsrange", KindRange, 0},
	3910: {"tstzrange", KindRange, 0}, 3912: {"daterange", KindRange, 0}, 3926: {"int8range", KindRange, 0},
	4451: {"int4multirange", KindMultirange, 0}, 4532: {"nummultirange", KindMultirange, 0},
	4533: {"tsmultirange", KindMultirange, 0}, 4534: {"tstzmultirange", KindMultirange, 0},
	4535: {"datemultirange", KindMultirange, 0}, 4536: {"int8multirange", KindMultirange, 0},

	1000: {"_bool", KindArray, 16}, 1001: {"_bytea", KindArray, 17}, 1002: {"_char", KindArray, 18},
	1003: {"_name", KindArray, 19}, 1016: {"_int8", KindArray, 20}, 1005: {"_int2", KindArray, 21},
	1007: {"_int4", KindArray, 23}, 1009: {"_text", KindArray, 25}, 1028: {"_oid", KindArray, 26},
	199: {"_json", KindArray, 114}, 143: {"_xml", KindArray, 142}, 651: {"_cidr", KindArray, 650},
	1021: {"_float4", KindArray, 700}, 1022: {"_float8", KindArray, 701}, 775: {"_macaddr8", KindArray, 774},
	791: {"_money", KindArray, 790}, 1040: {"_macaddr", KindArray, 829}, 1041: {"_inet", KindArray, 869},
	1014: {"_bpchar", KindArray, 1042}, 1015: {"_varchar", KindArray, 1043}, 1182: {"_date", KindArray, 1082},
	1183: {"_time", KindArray, 1083}, 1115: {"_timestamp", KindArray, 1114}, 1185: {"_timestamptz", KindArray, 1184},
	1187: {"_interval", KindArray, 1186}, 1270: {"_timetz", KindArray, 1266}, 1561: {"_bit", KindArray, 1560},
	1563: {"_varbit", KindArray, 1562}, 1231: {"_numeric", KindArray, 1700}, 2951: {"_uuid", KindArray, 2950},
	3221: {"_pg_lsn", KindArray, 3220}, 3643: {"_tsvector", KindArray, 3614}, 3645: {"_tsquery", KindArray, 3615},
	3807: {"_jsonb", KindArray, 3802}, 4073: {"_jsonpath", KindArray, 4072},
	3905: {"_int4range", KindArray, 3904}, 3907: {"_numrange", KindArray, 3906}, 3909: {"_tsrange", KindArray, 3908},
	3911: {"_tstzrange", KindArray, 3910}, 3913: {"_daterange", KindArray, 3912}, 3927: {"_int8range", KindArray, 3926},
	6150: {"_int4multirange", KindArray, 4451}, 6151: {"_nummultirange", KindArray, 4532},
	6152: {"_tsmultirange", KindArray, 4533}, 6153: {"_tstzmultirange", KindArray, 4534},
	6155: {"_datemultirange", KindArray, 4535}, 6157: {"_int8multirange", KindArray, 4536},
}

// BuiltinOIDs lists the OIDs Builtin knows, for tests against a catalog.
func BuiltinOIDs() []uint32 {
	oids := make([]uint32, 0, len(builtins))
	for oid := range builtins {
		oids = append(oids, oid)
	}
	return oids
}

// Builtin describes a built-in type from its OID and type modifier, as
// the catalog would with an array column declared with one dimension. It
// returns nil for a type it does not know (any type created in a database:
// enums, composites, domains, extension types).
func Builtin(oid uint32, mod int32) *Type {
	b, ok := builtins[oid]
	if !ok {
		return nil
	}
	t := &Type{OID: oid, Schema: "pg_catalog", Name: b.name, Kind: b.kind, Mod: mod}
	if b.kind == KindArray {
		t.Elem = Builtin(b.elem, mod)
		t.Delim = ','
		t.Dims = 1
	}
	return t
}
