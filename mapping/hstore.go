package mapping

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// HstorePair is one key and value of an hstore; a nil Value is NULL.
type HstorePair struct {
	Key   []byte
	Value []byte
}

// ParseHstore reads hstore's text output form (hstore_out):
//
//	"a"=>"1", "b"=>NULL, "say \"hi\""=>"back\\slash"
//
// Keys and values are double-quoted with '"' and '\' backslash-escaped;
// pairs are separated by ", "; the empty hstore is the empty text.
func ParseHstore(text []byte) ([]HstorePair, error) {
	var pairs []HstorePair
	i := 0
	quoted := func() ([]byte, error) {
		if i >= len(text) || text[i] != '"' {
			return nil, fmt.Errorf("malformed hstore at byte %d: expected '\"'", i)
		}
		i++
		out := []byte{}
		for {
			if i >= len(text) {
				return nil, fmt.Errorf("malformed hstore: unterminated string")
			}
			c := text[i]
			i++
			switch c {
			case '"':
				return out, nil
			case '\\':
				if i >= len(text) {
					return nil, fmt.Errorf("malformed hstore: backslash at the end")
				}
				out = append(out, text[i])
				i++
			default:
				out = append(out, c)
			}
		}
	}
	for i < len(text) {
		if len(pairs) > 0 {
			if i+1 >= len(text) || text[i] != ',' || text[i+1] != ' ' {
				return nil, fmt.Errorf("malformed hstore at byte %d: expected \", \"", i)
			}
			i += 2
		}
		k, err := quoted()
		if err != nil {
			return nil, err
		}
		if i+1 >= len(text) || text[i] != '=' || text[i+1] != '>' {
			return nil, fmt.Errorf("malformed hstore at byte %d: expected \"=>\"", i)
		}
		i += 2
		var v []byte
		if i+4 <= len(text) && string(text[i:i+4]) == "NULL" {
			i += 4
		} else if v, err = quoted(); err != nil {
			return nil, err
		}
		pairs = append(pairs, HstorePair{Key: k, Value: v})
	}
	return pairs, nil
}

// mapEntry is one entry of a decoded map value.
type mapEntry struct{ key, value any }

// decodeMap reads an hstore into a map<string, string>.
func decodeMap(t *arrow.MapType, text []byte) (any, error) {
	if t.KeyType().ID() != arrow.STRING || t.ItemType().ID() != arrow.STRING {
		return nil, &noDecoderError{dt: t}
	}
	pairs, err := ParseHstore(text)
	if err != nil {
		return nil, err
	}
	out := make([]mapEntry, len(pairs))
	for i, p := range pairs {
		if !utf8.Valid(p.Key) || (p.Value != nil && !utf8.Valid(p.Value)) {
			return nil, fmt.Errorf("pair %d: not valid UTF-8", i+1)
		}
		out[i].key = string(p.Key)
		if p.Value != nil {
			out[i].value = string(p.Value)
		}
	}
	return out, nil
}
