package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// checkTuples verifies that the tuple data of an Insert, Update or Delete
// message (and the relation list of a Truncate) fits in the message before pglogrepl parses it: pglogrepl
// allocates a column's buffer from its length field first, so a corrupt
// length would allocate up to 4 GiB.
func checkTuples(data []byte, inStream bool) error {
	if len(data) == 0 {
		return nil
	}
	kind := data[0]
	if kind == 'M' {
		return checkLogicalMessage(data, inStream)
	}
	if kind == 'T' {
		p := 1
		if inStream {
			p += 4
		}
		if p+5 > len(data) {
			return fmt.Errorf("truncated truncate message")
		}
		if n := int64(binary.BigEndian.Uint32(data[p:])); n*4 > int64(len(data)-p-5) {
			return fmt.Errorf("truncate names %d relations in %d bytes", n, len(data)-p-5)
		}
		return nil
	}
	if kind != 'I' && kind != 'U' && kind != 'D' {
		return nil
	}
	p := 1 + 4 // type, relation id
	if inStream {
		p += 4 // xid
	}
	tuple := func() error {
		if p+2 > len(data) {
			return fmt.Errorf("truncated tuple")
		}
		n := int(binary.BigEndian.Uint16(data[p:]))
		p += 2
		for i := 0; i < n; i++ {
			if p >= len(data) {
				return fmt.Errorf("truncated tuple")
			}
			k := data[p]
			p++
			if k == 't' || k == 'b' {
				if p+4 > len(data) {
					return fmt.Errorf("truncated tuple")
				}
				l := int64(binary.BigEndian.Uint32(data[p:]))
				p += 4
				if l > int64(len(data)-p) {
					return fmt.Errorf("column %d claims %d bytes, %d remain", i+1, l, len(data)-p)
				}
				p += int(l)
			}
		}
		return nil
	}
	for p < len(data) {
		switch data[p] {
		case 'N', 'K', 'O':
			p++
			if err := tuple(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected tuple marker %q", data[p])
		}
	}
	return nil
}

// checkLogicalMessage verifies a logical decoding message's lengths:
// pglogrepl slices the content by its length field, which can reach past
// the end of a truncated message into the buffer's spare capacity.
func checkLogicalMessage(data []byte, inStream bool) error {
	p := 1
	if inStream {
		p += 4
	}
	p += 1 + 8 // flags, LSN
	if p > len(data) {
		return fmt.Errorf("truncated logical message")
	}
	end := bytes.IndexByte(data[p:], 0)
	if end < 0 {
		return fmt.Errorf("logical message prefix not terminated")
	}
	p += end + 1
	if p+4 > len(data) {
		return fmt.Errorf("truncated logical message")
	}
	if l := int64(binary.BigEndian.Uint32(data[p:])); l != int64(len(data)-p-4) {
		return fmt.Errorf("logical message content claims %d bytes, %d present", l, len(data)-p-4)
	}
	return nil
}
