package iceberg

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// Rows of a binary copy (COPY ... (FORMAT binary), chosen by replication
// for tables whose every column mapping.BinaryReadable accepts) arrive as
// tuples of Binary datums. Their values go through appendTuple like text
// ones; their keys (mirror.appendKey) are built here from the same decoded
// values the text path parses, so a key equals the one appendKeyFromText
// builds from the value's text form (the stream's changes find copied
// rows) and the one appendKeyFromArray reads back.

// appendKeyFromBinary appends the key part of a value of type oid in its
// binary form.
func appendKeyFromBinary(dst []byte, dt arrow.DataType, oid uint32, data []byte) ([]byte, error) {
	if oid == mapping.OIDInt8 && dt.ID() == arrow.INT64 && len(data) == 8 {
		// A bigint's binary form is its key part's value bytes.
		return append(append(dst, 8), data...), nil
	}
	v, err := mapping.ReadBinary(oid, dt, data)
	if err != nil {
		return nil, fmt.Errorf("key value: %w", err)
	}
	switch dt.ID() {
	case arrow.BOOL:
		return appendKeyBool(dst, v.Int != 0), nil
	case arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIMESTAMP:
		return appendKeyInt(dst, v.Int), nil
	case arrow.FLOAT32, arrow.FLOAT64:
		return appendKeyFloat(dst, v.Float), nil
	case arrow.DECIMAL128:
		return appendKeyDecimal(dst, v.Decimal), nil
	case arrow.STRING, arrow.BINARY, arrow.EXTENSION: // EXTENSION: uuid, the only one ReadBinary reads
		return appendKeyPart(dst, v.Bytes), nil
	}
	return nil, fmt.Errorf("type %s cannot be part of a key yet", dt)
}

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
