package mapping

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// EWKB type flags (PostGIS's extended WKB).
const (
	ewkbZ    = 0x80000000
	ewkbM    = 0x40000000
	ewkbSRID = 0x20000000
)

// maxGeometryDepth bounds how deeply geometry collections nest.
const maxGeometryDepth = 32

// ParseEWKB decodes the text output form of a PostGIS geometry or
// geography, hex EWKB, and checks that the bytes are one well-formed
// geometry. It returns the bytes unchanged: OGC WKB, with the SRID and the
// Z/M flags in PostGIS's extended form when the value has them, so nothing
// of the value is lost.
func ParseEWKB(text []byte) ([]byte, error) {
	if len(text) == 0 || len(text)%2 != 0 {
		return nil, errors.New("EWKB hex of odd or zero length")
	}
	b := make([]byte, len(text)/2)
	if _, err := hex.Decode(b, text); err != nil {
		return nil, fmt.Errorf("bad EWKB hex: %w", err)
	}
	r := wkbReader{b: b}
	if err := r.geometry(0); err != nil {
		return nil, err
	}
	if r.pos != len(b) {
		return nil, fmt.Errorf("EWKB has %d bytes after the geometry", len(b)-r.pos)
	}
	return b, nil
}

type wkbReader struct {
	b   []byte
	pos int
	ord binary.ByteOrder
}

var errWKBShort = errors.New("EWKB ends inside the geometry")

func (r *wkbReader) uint32() (uint32, error) {
	if len(r.b)-r.pos < 4 {
		return 0, errWKBShort
	}
	v := r.ord.Uint32(r.b[r.pos:])
	r.pos += 4
	return v, nil
}

// points skips n points of dims coordinates.
func (r *wkbReader) points(n uint32, dims int) error {
	need := uint64(n) * uint64(dims) * 8
	if uint64(len(r.b)-r.pos) < need {
		return errWKBShort
	}
	r.pos += int(need)
	return nil
}

func (r *wkbReader) count() (uint32, error) {
	n, err := r.uint32()
	if err != nil {
		return 0, err
	}
	// Every counted item takes at least 4 bytes, so a count beyond the
	// remaining bytes is malformed (and must not size anything).
	if uint64(n)*4 > uint64(len(r.b)-r.pos) {
		return 0, errWKBShort
	}
	return n, nil
}

func (r *wkbReader) geometry(depth int) error {
	if depth > maxGeometryDepth {
		return fmt.Errorf("EWKB nests more than %d levels", maxGeometryDepth)
	}
	if r.pos >= len(r.b) {
		return errWKBShort
	}
	switch r.b[r.pos] {
	case 0:
		r.ord = binary.BigEndian
	case 1:
		r.ord = binary.LittleEndian
	default:
		return fmt.Errorf("EWKB byte order %d is neither 0 nor 1", r.b[r.pos])
	}
	r.pos++
	typ, err := r.uint32()
	if err != nil {
		return err
	}
	dims := 2
	if typ&ewkbZ != 0 {
		dims++
	}
	if typ&ewkbM != 0 {
		dims++
	}
	if typ&ewkbSRID != 0 {
		if _, err := r.uint32(); err != nil {
			return err
		}
	}
	base := typ &^ (ewkbZ | ewkbM | ewkbSRID)
	// ISO WKB marks Z, M and ZM by adding 1000, 2000, 3000.
	if base >= 1000 && base < 4000 && typ&(ewkbZ|ewkbM) == 0 {
		switch base / 1000 {
		case 1, 2:
			dims++
		case 3:
			dims += 2
		}
		base %= 1000
	}
	switch base {
	case 1: // point
		return r.points(1, dims)
	case 2, 8: // linestring, circularstring
		n, err := r.count()
		if err != nil {
			return err
		}
		return r.points(n, dims)
	case 3, 17: // polygon, triangle
		rings, err := r.count()
		if err != nil {
			return err
		}
		for range rings {
			n, err := r.count()
			if err != nil {
				return err
			}
			if err := r.points(n, dims); err != nil {
				return err
			}
		}
		return nil
	case 4, 5, 6, 7, 9, 10, 11, 12, 15, 16: // collections of geometries
		n, err := r.count()
		if err != nil {
			return err
		}
		ord := r.ord
		for range n {
			if err := r.geometry(depth + 1); err != nil {
				return err
			}
		}
		r.ord = ord
		return nil
	}
	return fmt.Errorf("EWKB geometry type %d is not one PostGIS writes", base)
}
