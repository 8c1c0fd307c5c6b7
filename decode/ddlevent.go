package decode

import (
	"encoding/json"
	"errors"
	"fmt"
)

// DDLEvent is the body of a DDL capture message (see replication.SetupSQL):
// a table's OID, name and live columns after a DDL command, or a DROP TABLE.
type DDLEvent struct {
	RelID  uint32 `json:"relid"`
	Tag    string `json:"tag"`
	Schema string `json:"schema"`
	Table  string `json:"table"`
	// WholeRow: the mirror is kept by the whole row (REPLICA IDENTITY FULL
	// without a primary key that is not deferrable); nil from older
	// triggers.
	WholeRow *bool       `json:"whole_row"`
	Columns  []DDLColumn `json:"columns"`
}

// DDLColumn is a live column of a DDL event's table.
type DDLColumn struct {
	AttNum  int    `json:"attnum"`
	Name    string `json:"name"`
	TypeOID uint32 `json:"type_oid"`
	TypeMod int32  `json:"typmod"`
	NotNull bool   `json:"not_null"`
	// Generated is nil in events of a trigger installed before it was
	// sent (pg2iceberg setup installs the current one).
	Generated *bool `json:"generated"`
	// Key: the column is in the mirror's key (nil from older triggers).
	Key *bool `json:"key"`
}

// ErrMalformedDDL is a DDL event body that is not the capture's JSON.
var ErrMalformedDDL = errors.New("malformed DDL event")

// ParseDDLEvent parses a DDL event's JSON body. The error does not quote
// the body: it may be long, and it is not the bridge's to echo.
func ParseDDLEvent(body []byte) (*DDLEvent, error) {
	var ev DDLEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		// A type error quotes the value, which may be long: name the field.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%w (%d bytes): field %s is not a %s", ErrMalformedDDL, len(body), te.Field, te.Type)
		}
		return nil, fmt.Errorf("%w (%d bytes): %w", ErrMalformedDDL, len(body), err)
	}
	if ev.RelID == 0 || ev.Tag == "" {
		return nil, fmt.Errorf("%w (%d bytes): no relid or tag", ErrMalformedDDL, len(body))
	}
	return &ev, nil
}

// KeyNames returns the event's key columns (those of the primary key, else
// of the replica identity index), in column order; false when the event
// does not say (an older trigger).
func (ev *DDLEvent) KeyNames() ([]string, bool) {
	var out []string
	for _, c := range ev.Columns {
		if c.Key == nil {
			return nil, false
		}
		if *c.Key {
			out = append(out, c.Name)
		}
	}
	return out, true
}
