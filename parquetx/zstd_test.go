package parquetx

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestZstdCodec: loading the package leaves arrow-go's codec alone; after
// UseFastZstd (twice: the second call changes nothing) Parquet pages are
// compressed by zstdCodec, in frames without a content checksum that
// decode to what went in.
func TestZstdCodec(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(zstdCodec); ok {
		t.Fatal("the zstd codec is zstdCodec before UseFastZstd: set at package load")
	}
	for range 2 {
		if err := UseFastZstd(); err != nil {
			t.Fatal(err)
		}
	}
	if codec, err = compress.GetCodec(compress.Codecs.Zstd); err != nil {
		t.Fatal(err)
	}
	if c, ok := codec.(zstdCodec); !ok {
		t.Fatalf("the zstd codec is %T, not zstdCodec", codec)
	} else if _, wrapped := c.orig.(zstdCodec); wrapped {
		t.Fatal("a second UseFastZstd wrapped zstdCodec in itself")
	}
	var page []byte
	for i := range 100_000 {
		page = binary.LittleEndian.AppendUint64(page, uint64(i*i))
	}
	for _, level := range []int{1, 3, compress.DefaultCompressionLevel} {
		frame := codec.EncodeLevel(nil, page, level)
		if len(frame) < 5 || !bytes.Equal(frame[:4], []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			t.Fatalf("level %d: not a zstd frame: % x", level, frame[:min(len(frame), 8)])
		}
		if frame[4]&0x04 != 0 {
			t.Errorf("level %d: the frame has a content checksum", level)
		}
		got, err := compress.Decode(codec, nil, frame)
		if err != nil || !bytes.Equal(got, page) {
			t.Fatalf("level %d: decoded %d bytes (%v), want the %d written", level, len(got), err, len(page))
		}
	}
}
