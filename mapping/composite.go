package mapping

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ParseComposite reads the text output form of a composite value
// (record_out) into its fields, nil for a NULL field:
//
//	(1,abc,)   ("a b","say ""hi""","back\\slash")   (1,"(2,3)")
//
// An empty unquoted field is NULL, "" is the empty string. Inside quotes a
// doubled quote is a quote; anywhere a backslash escapes the next
// character (record_in's rules). A one-field composite whose field is NULL
// prints as "()", which reads as one NULL field.
func ParseComposite(text []byte) ([][]byte, error) {
	if len(text) < 2 || text[0] != '(' {
		return nil, fmt.Errorf("not a composite value: no opening parenthesis")
	}
	var fields [][]byte
	i := 1
	for {
		if i >= len(text) {
			return nil, fmt.Errorf("malformed composite value: no closing parenthesis")
		}
		if text[i] == ',' || text[i] == ')' {
			fields = append(fields, nil) // empty: NULL
		} else {
			val := []byte{}
			quoted := false
			for {
				if i >= len(text) {
					return nil, fmt.Errorf("malformed composite value: unterminated field")
				}
				c := text[i]
				if !quoted && (c == ',' || c == ')') {
					break
				}
				i++
				switch {
				case c == '\\':
					if i >= len(text) {
						return nil, fmt.Errorf("malformed composite value: backslash at the end")
					}
					val = append(val, text[i])
					i++
				case c == '"' && !quoted:
					quoted = true
				case c == '"' && i < len(text) && text[i] == '"':
					val = append(val, '"')
					i++
				case c == '"':
					quoted = false
				default:
					val = append(val, c)
				}
			}
			fields = append(fields, val)
		}
		if text[i] == ')' {
			i++
			break
		}
		i++ // ','
	}
	if i != len(text) {
		return nil, fmt.Errorf("malformed composite value: text after the closing parenthesis")
	}
	return fields, nil
}

// isIntervalStruct reports whether t is IntervalType's Arrow form.
func isIntervalStruct(t *arrow.StructType) bool {
	return t.NumFields() == 3 &&
		t.Field(0).Name == "months" && t.Field(0).Type.ID() == arrow.INT32 &&
		t.Field(1).Name == "days" && t.Field(1).Type.ID() == arrow.INT32 &&
		t.Field(2).Name == "micros" && t.Field(2).Type.ID() == arrow.INT64
}

// decodeStruct reads a composite value, or an interval into IntervalType's
// struct: a composite's text always starts with '(', an interval's never.
func decodeStruct(t *arrow.StructType, text []byte) (any, error) {
	if len(text) > 0 && text[0] != '(' && isIntervalStruct(t) {
		iv, err := ParseInterval(text)
		if err != nil {
			return nil, err
		}
		return []any{iv.Months, iv.Days, iv.Micros}, nil
	}
	fields, err := ParseComposite(text)
	if err != nil {
		return nil, err
	}
	if len(fields) != t.NumFields() {
		return nil, fmt.Errorf("composite value has %d fields, the struct has %d", len(fields), t.NumFields())
	}
	out := make([]any, len(fields))
	for i, f := range fields {
		if f == nil {
			if !t.Field(i).Nullable {
				return nil, fmt.Errorf("field %s is NULL but required", t.Field(i).Name)
			}
			continue
		}
		v, err := decodeValue(t.Field(i).Type, f)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", t.Field(i).Name, err)
		}
		out[i] = v
	}
	return out, nil
}
