package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated reports a change message that ends inside its header or a
// tuple.
var errTruncated = errors.New("truncated message")

// decodeChange decodes an Insert, Update or Delete message, the bulk of a
// stream, without pglogrepl: ParseV2 allocates a message, a tuple, and a
// struct and a buffer per column. Every length is checked against the
// message before it is used. With Transient the decoder's own Change and
// tuples are filled in and the Datums alias data: nothing is allocated.
//
// Message format (PostgreSQL "Logical Replication Message Formats"):
//
//	Insert: 'I' [xid] relid 'N' TupleData
//	Update: 'U' [xid] relid [('K'|'O') TupleData] 'N' TupleData
//	Delete: 'D' [xid] relid ('K'|'O') TupleData
//	TupleData: ncols:u16, per column 'n' | 'u' | ('t'|'b') len:u32 bytes
//
// where xid is present inside a streamed segment.
func (d *Decoder) decodeChange(data []byte) (Message, error) {
	op := Op(data[0])
	if !d.Transient {
		data = bytes.Clone(data) // the Datums alias it
	}
	p := 1
	var xid uint32
	if d.inStream {
		if len(data) < p+4 {
			return nil, malformed(data, errTruncated)
		}
		xid = binary.BigEndian.Uint32(data[p:])
		p += 4
	}
	if len(data) < p+5 { // relation ID, first tuple marker
		return nil, malformed(data, errTruncated)
	}
	rel, err := d.rel(binary.BigEndian.Uint32(data[p:]))
	if err != nil {
		return nil, err
	}
	p += 4
	c := &d.change
	if !d.Transient {
		c = new(Change)
	}
	*c = Change{Op: op, Rel: rel, XID: xid}
	marker := data[p]
	p++
	if op != Insert && (marker == 'K' || marker == 'O') {
		c.BeforeIsKey = marker == 'K'
		if c.Before, p, err = d.tuple(&d.before, data, p, rel, "old"); err != nil {
			return nil, err
		}
		if op == Update {
			if p >= len(data) {
				return nil, fmt.Errorf("%s: new tuple missing", rel.QualifiedName())
			}
			marker = data[p]
			p++
		}
	}
	switch {
	case op == Delete:
		if c.Before == nil {
			return nil, malformed(data, fmt.Errorf("old tuple marker %q, want 'K' or 'O'", marker))
		}
	case marker != 'N':
		return nil, malformed(data, fmt.Errorf("new tuple marker %q, want 'N'", marker))
	default:
		if c.After, p, err = d.tuple(&d.after, data, p, rel, "new"); err != nil {
			return nil, err
		}
	}
	if p != len(data) {
		return nil, malformed(data, fmt.Errorf("%d bytes after the last tuple", len(data)-p))
	}
	return c, nil
}

// tuple decodes the TupleData at data[p:] into a tuple of rel: *buf's
// backing array with Transient, a new one otherwise. It returns the
// position after the tuple.
func (d *Decoder) tuple(buf *Tuple, data []byte, p int, rel *Relation, which string) (Tuple, int, error) {
	if p+2 > len(data) {
		return nil, p, malformed(data, errTruncated)
	}
	n := int(binary.BigEndian.Uint16(data[p:]))
	p += 2
	if n != len(rel.Columns) {
		return nil, p, fmt.Errorf("%s: %s tuple has %d columns, relation has %d", rel.QualifiedName(), which, n, len(rel.Columns))
	}
	var t Tuple
	if d.Transient {
		if cap(*buf) < n {
			*buf = make(Tuple, n)
		}
		t = (*buf)[:n]
	} else {
		t = make(Tuple, n)
	}
	for i := range t {
		if p >= len(data) {
			return nil, p, malformed(data, errTruncated)
		}
		k := data[p]
		p++
		switch k {
		case 'n':
			t[i] = Datum{Kind: Null}
		case 'u':
			t[i] = Datum{Kind: Unchanged}
		case 't', 'b':
			if p+4 > len(data) {
				return nil, p, malformed(data, errTruncated)
			}
			l := binary.BigEndian.Uint32(data[p:])
			p += 4
			if uint64(l) > uint64(len(data)-p) {
				return nil, p, malformed(data, fmt.Errorf("column %d claims %d bytes, %d remain", i+1, l, len(data)-p))
			}
			end := p + int(l)
			kind := Text
			if k == 'b' {
				kind = Binary
			}
			// Capacity capped: an append to one value cannot overwrite the next.
			t[i] = Datum{Kind: kind, Data: data[p:end:end]}
			p = end
		default:
			return nil, p, fmt.Errorf("%s: column %s: unknown tuple data kind %q", rel.QualifiedName(), rel.Columns[i].Name, k)
		}
	}
	return t, p, nil
}

func malformed(data []byte, err error) error {
	return fmt.Errorf("malformed pgoutput message %q: %w", typeByte(data), err)
}
