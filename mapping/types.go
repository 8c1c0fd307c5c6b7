package mapping

import (
	"fmt"

	"github.com/apache/iceberg-go"
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
	OIDNumeric     = 1700
	OIDUUID        = 2950
	OIDJSONB       = 3802
)

// Column is what mapping needs to know about a source column.
type Column struct {
	Name    string
	TypeOID uint32
	// TypeMod is atttypmod: -1 when the type has no modifier.
	TypeMod int32
	// TypeName is the type's name as PostgreSQL prints it (format_type), used
	// in error messages.
	TypeName string
}

// UnsupportedTypeError reports a column whose type has no mapping.
type UnsupportedTypeError struct {
	Table, Column string
	OID           uint32
	TypeName      string
}

func (e *UnsupportedTypeError) Error() string {
	name := e.TypeName
	if name == "" {
		name = fmt.Sprintf("oid %d", e.OID)
	}
	return fmt.Sprintf("%s.%s: type %s has no Iceberg mapping yet; leave the column out of the publication with a column list: ALTER PUBLICATION <publication> SET TABLE %s (<the other columns>)", e.Table, e.Column, name, e.Table)
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

// For returns the Iceberg type of a column of table (schema.name).
func For(table string, c Column) (iceberg.Type, error) {
	switch c.TypeOID {
	case OIDBool:
		return iceberg.PrimitiveTypes.Bool, nil
	case OIDInt2, OIDInt4:
		return iceberg.PrimitiveTypes.Int32, nil
	case OIDInt8, OIDOID:
		return iceberg.PrimitiveTypes.Int64, nil
	case OIDFloat4:
		return iceberg.PrimitiveTypes.Float32, nil
	case OIDFloat8:
		return iceberg.PrimitiveTypes.Float64, nil
	case OIDNumeric:
		p, s, ok := NumericTypmod(c.TypeMod)
		if !ok || p > MaxDecimalPrecision || s < 0 || s > p {
			// Unconstrained or beyond Iceberg's decimal: the exact text form.
			return iceberg.PrimitiveTypes.String, nil
		}
		return iceberg.DecimalTypeOf(p, s), nil
	case OIDText, OIDVarchar, OIDBPChar, OIDName, OIDJSON, OIDJSONB:
		return iceberg.PrimitiveTypes.String, nil
	case OIDBytea:
		return iceberg.PrimitiveTypes.Binary, nil
	case OIDUUID:
		return iceberg.PrimitiveTypes.UUID, nil
	case OIDDate:
		return iceberg.PrimitiveTypes.Date, nil
	case OIDTime:
		return iceberg.PrimitiveTypes.Time, nil
	case OIDTimestamp:
		return iceberg.PrimitiveTypes.Timestamp, nil
	case OIDTimestampTZ:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	}
	return nil, &UnsupportedTypeError{Table: table, Column: c.Name, OID: c.TypeOID, TypeName: c.TypeName}
}
