package iceberg

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// binaryValueText renders a value in binary form readably: as PostgreSQL
// would for the usual values, in hex when it cannot be read.
func binaryValueText(dt arrow.DataType, oid uint32, data []byte) string {
	v, err := mapping.ReadBinary(oid, dt, data)
	if err != nil {
		return `\x` + hex.EncodeToString(data[:min(len(data), 32)])
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return strconv.FormatBool(v.Int != 0)
	case *arrow.Int32Type, *arrow.Int64Type:
		return strconv.FormatInt(v.Int, 10)
	case *arrow.Float32Type:
		return strconv.FormatFloat(v.Float, 'g', -1, 32)
	case *arrow.Float64Type:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case *arrow.Decimal128Type:
		return v.Decimal.ToString(dt.Scale)
	case *arrow.StringType:
		return string(v.Bytes)
	case *arrow.Date32Type:
		return arrow.Date32(v.Int).FormattedString()
	case *arrow.TimestampType:
		return time.UnixMicro(v.Int).UTC().Format("2006-01-02 15:04:05.999999")
	}
	if len(v.Bytes) == 16 && oid == mapping.OIDUUID {
		return uuid.UUID(v.Bytes).String()
	}
	return `\x` + hex.EncodeToString(v.Bytes[:min(len(v.Bytes), 32)])
}
