package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// copySignature opens the output of COPY ... TO STDOUT (FORMAT binary).
var copySignature = []byte("PGCOPY\n\377\r\n\x00")

// maxCopyField bounds a field's claimed length: no PostgreSQL value is 1 GiB
// or more, so a larger length is corrupt output, not a reason to wait for
// (and buffer) that much more.
const maxCopyField = 1<<30 - 1

// CopyBinaryParser reads the output of COPY ... TO STDOUT (FORMAT binary)
// as it arrives, in chunks of any size, into tuples of Binary and Null
// datums: each value in its type's binary (send/recv) form, as pgoutput's
// binary mode sends it.
//
// Format (PostgreSQL "COPY", Binary Format): the 11-byte signature, int32
// flags, int32 header extension length and the extension; then per row an
// int16 field count and per field an int32 length (-1: NULL) and the
// bytes; an int16 -1 ends the data. Integers are big endian.
//
// A row whole in a chunk is read in place: its datums alias the chunk. Only
// a row split across chunks is copied, into a buffer the parser reuses. The
// zero value is ready to use; a parser is used by one goroutine.
type CopyBinaryParser struct {
	tuple   Tuple
	partial []byte // the start of a header or row split across chunks
	header  bool   // the header has been read
	ended   bool   // the trailer has been read
}

// errCopyIncomplete says a header or row continues in the next chunk.
var errCopyIncomplete = errors.New("incomplete")

// Feed reads the rows in data, the next bytes of the output, and calls row
// for each row of columns values. The tuple and its data are valid only
// during the call. A row split across chunks is completed by the next
// Feed. Feed stops at the first error, its own or row's.
func (p *CopyBinaryParser) Feed(data []byte, columns int, row func(Tuple) error) error {
	for len(p.partial) > 0 {
		// Complete the split header or row a few bytes at a time: each
		// attempt says how much of it is known to be needed so far.
		need, err := p.next(p.partial, columns, row)
		if err != errCopyIncomplete {
			p.partial = p.partial[:0]
			if err != nil {
				return err
			}
			break
		}
		if len(data) == 0 {
			return nil
		}
		take := min(need-len(p.partial), len(data))
		p.partial = append(p.partial, data[:take]...)
		data = data[take:]
	}
	for len(data) > 0 {
		n, err := p.next(data, columns, row)
		if err == errCopyIncomplete {
			p.partial = append(p.partial[:0], data...)
			return nil
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// End checks that the output ended after the trailer, and readies the
// parser for another COPY.
func (p *CopyBinaryParser) End() error {
	defer func() { p.partial, p.header, p.ended = p.partial[:0], false, false }()
	switch {
	case len(p.partial) > 0:
		return fmt.Errorf("copy output ended inside a row (%d bytes of it)", len(p.partial))
	case !p.ended:
		return errors.New("copy output ended without its trailer")
	}
	return nil
}

// next reads the header, a row or the trailer at the start of data and
// returns the bytes it took. With errCopyIncomplete, n is the length known
// so far to be needed, more than len(data).
func (p *CopyBinaryParser) next(data []byte, columns int, row func(Tuple) error) (n int, err error) {
	if p.ended {
		return 0, fmt.Errorf("copy output has %d bytes after its trailer", len(data))
	}
	if !p.header {
		n, err := copyHeader(data)
		if err == nil {
			p.header = true
		}
		return n, err
	}
	if len(data) < 2 {
		return 2, errCopyIncomplete
	}
	count := int16(binary.BigEndian.Uint16(data))
	if count == -1 {
		p.ended = true
		return 2, nil
	}
	if int(count) != columns {
		return 0, fmt.Errorf("copy row has %d fields, want %d", count, columns)
	}
	if cap(p.tuple) < columns {
		p.tuple = make(Tuple, columns)
	}
	t := p.tuple[:columns]
	at := 2
	for i := range t {
		if len(data) < at+4 {
			return at + 4, errCopyIncomplete
		}
		l := int32(binary.BigEndian.Uint32(data[at:]))
		at += 4
		switch {
		case l == -1:
			t[i] = Datum{Kind: Null}
			continue
		case l < -1 || l > maxCopyField:
			return 0, fmt.Errorf("copy field %d claims %d bytes", i+1, l)
		}
		end := at + int(l)
		if len(data) < end {
			return end, errCopyIncomplete
		}
		// Capacity capped: an append to one value cannot overwrite the next.
		t[i] = Datum{Kind: Binary, Data: data[at:end:end]}
		at = end
	}
	return at, row(t)
}

// copyHeader checks the header at the start of data and returns its length.
func copyHeader(data []byte) (int, error) {
	const fixed = 11 + 4 + 4 // signature, flags, extension length
	if len(data) < len(copySignature) && bytes.HasPrefix(copySignature, data) {
		return fixed, errCopyIncomplete
	}
	if !bytes.HasPrefix(data, copySignature) {
		return 0, fmt.Errorf("copy output does not start with the binary COPY signature: %q", data[:min(len(data), len(copySignature))])
	}
	if len(data) < fixed {
		return fixed, errCopyIncomplete
	}
	// Bits 0-15 are critical (a reader must stop on any it does not know);
	// bit 16 says OIDs follow (servers before PostgreSQL 12); bits 17-31
	// may be ignored.
	if flags := binary.BigEndian.Uint32(data[11:]); flags&0x1ffff != 0 {
		return 0, fmt.Errorf("binary COPY header has flags %#x this reader does not know", flags)
	}
	ext := int32(binary.BigEndian.Uint32(data[15:]))
	if ext < 0 || ext > maxCopyField {
		return 0, fmt.Errorf("binary COPY header extension claims %d bytes", ext)
	}
	if len(data) < fixed+int(ext) {
		return fixed + int(ext), errCopyIncomplete
	}
	return fixed + int(ext), nil
}
