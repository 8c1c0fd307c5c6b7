package decode_test

import (
	"bytes"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// TestChangesAgreeWithParseV2: Insert, Update and Delete are decoded
// without pglogrepl; every captured message must decode as ParseV2 decodes
// it, with and without Transient, in and out of stream segments.
func TestChangesAgreeWithParseV2(t *testing.T) {
	for _, transient := range []bool{false, true} {
		for _, name := range scenarios {
			t.Run(name, func(t *testing.T) {
				fast := decode.Decoder{Transient: transient}
				var ref decode.Decoder
				changes := 0
				for i, m := range readBin(t, name) {
					inStream := fast.InStream()
					got, err := fast.Decode(m)
					if err != nil {
						t.Fatalf("message %d (%q): %v", i, m[0], err)
					}
					want, err := ref.DecodeWithParseV2(m)
					if err != nil {
						t.Fatalf("message %d (%q) with ParseV2: %v", i, m[0], err)
					}
					if g, w := render(got), render(want); g != w {
						t.Errorf("message %d (%q, in stream %t) decodes as\n%s\nParseV2 decodes it as\n%s", i, m[0], inStream, g, w)
					}
					if _, ok := got.(*decode.Change); ok {
						changes++
					}
				}
				if changes == 0 && name != "message" && name != "origin" {
					t.Errorf("%s.bin: no change compared", name)
				}
			})
		}
	}
}

// TestTransientChangeAllocatesNothing: with Transient, a change decodes
// into the decoder's own buffers, aliasing its input.
func TestTransientChangeAllocatesNothing(t *testing.T) {
	d := decode.Decoder{Transient: true}
	if _, err := d.Decode(relationMsg()); err != nil {
		t.Fatal(err)
	}
	msgs := [][]byte{
		(&msgBuilder{}).byte1('I').u32(42).byte1('N').u16(2).text("7").text("seven").b,
		(&msgBuilder{}).byte1('U').u32(42).byte1('K').u16(2).text("7").byte1('n').byte1('N').u16(2).text("8").byte1('u').b,
		(&msgBuilder{}).byte1('U').u32(42).byte1('O').u16(2).text("8").text("x").byte1('N').u16(2).text("8").text("y").b,
		(&msgBuilder{}).byte1('D').u32(42).byte1('K').u16(2).text("8").byte1('n').b,
	}
	for _, m := range msgs {
		msg, err := d.Decode(m)
		if err != nil {
			t.Fatalf("Decode(%q): %v", m, err)
		}
		c := msg.(*decode.Change)
		for _, tup := range []decode.Tuple{c.Before, c.After} {
			for _, v := range tup {
				if len(v.Data) > 0 && !bytes.Contains(m, v.Data) {
					t.Errorf("Decode(%q): datum %q is not in the message", m, v.Data)
				}
			}
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = d.Decode(m) }); n != 0 {
			t.Errorf("Decode(%q) with Transient: %v allocations, want 0", m, n)
		}
	}
}

// TestTransientEmptyTextIsNotNull: an empty text value aliases the message
// and must stay a non-nil slice (nil is NULL to mapping.Append).
func TestTransientEmptyTextIsNotNull(t *testing.T) {
	for _, transient := range []bool{false, true} {
		d := decode.Decoder{Transient: transient}
		if _, err := d.Decode(relationMsg()); err != nil {
			t.Fatal(err)
		}
		msg, err := d.Decode((&msgBuilder{}).byte1('I').u32(42).byte1('N').u16(2).text("1").text("").b)
		if err != nil {
			t.Fatal(err)
		}
		if v := msg.(*decode.Change).After[1]; v.Kind != decode.Text || v.Data == nil {
			t.Errorf("Transient %t: empty text decoded as kind %d, nil data %t", transient, v.Kind, v.Data == nil)
		}
	}
}

// BenchmarkDecodeInsert: an insert of the bench's insert workload (bigint
// key, int, md5 text, timestamptz) through each decoding path.
func BenchmarkDecodeInsert(b *testing.B) {
	w := &msgBuilder{}
	w.byte1('R').u32(7).str("public").str("ins").byte1('d').u16(4)
	w.byte1(1).str("id").u32(20).u32(0xffffffff)
	w.byte1(0).str("n").u32(23).u32(0xffffffff)
	w.byte1(0).str("s").u32(25).u32(0xffffffff)
	w.byte1(0).str("ts").u32(1184).u32(0xffffffff)
	rel := w.b
	insert := (&msgBuilder{}).byte1('I').u32(7).byte1('N').u16(4).text("1234567").text("42").
		text("0cc175b9c0f1b6a831c399e269772661").text("2026-11-30 17:18:01.123456+00").b
	for _, path := range []struct {
		name      string
		transient bool
		decode    func(*decode.Decoder, []byte) (decode.Message, error)
	}{
		{"ParseV2", false, (*decode.Decoder).DecodeWithParseV2},
		{"owned", false, (*decode.Decoder).Decode},
		{"transient", true, (*decode.Decoder).Decode},
	} {
		b.Run(path.name, func(b *testing.B) {
			d := decode.Decoder{Transient: path.transient}
			if _, err := d.Decode(rel); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := path.decode(&d, insert); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
