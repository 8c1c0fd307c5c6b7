package parquetx

import (
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// zstdCodec is the Parquet zstd codec of every file the bridge writes,
// once UseFastZstd has registered it: arrow-go's, except that its frames
// carry no content checksum. zstd's reference library writes none by
// default (nor does parquet-java), and a Parquet page is covered by its
// own optional CRC; klauspost's encoder, which arrow-go uses, adds an
// xxhash of every page by default, 3-4% of a copy's CPU. Decoding is
// arrow-go's codec, unchanged.
type zstdCodec struct {
	orig compress.Codec
}

// UseFastZstd makes zstdCodec arrow-go's zstd codec, for the whole
// process: every Parquet file written from then on, by the bridge or by a
// library (iceberg-go), compresses its pages with it. main calls it once
// at start, before any file is written; it is not safe to call while
// files are being written. Calling it again does nothing.
func UseFastZstd() error {
	orig, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return fmt.Errorf("arrow-go has no zstd codec: %w", err)
	}
	if _, ok := orig.(zstdCodec); !ok {
		compress.RegisterCodec(compress.Codecs.Zstd, zstdCodec{orig: orig})
	}
	return nil
}

// zstdEncoders pools encoders by level (as arrow-go does).
var zstdEncoders sync.Map // zstd.EncoderLevel → *sync.Pool of *zstd.Encoder

func zstdLevel(level int) zstd.EncoderLevel {
	if level == compress.DefaultCompressionLevel {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(level)
}

// zstdPool returns the encoder pool of level l.
func zstdPool(l zstd.EncoderLevel) *sync.Pool {
	if p, ok := zstdEncoders.Load(l); ok {
		return p.(*sync.Pool)
	}
	p, _ := zstdEncoders.LoadOrStore(l, &sync.Pool{New: func() any {
		enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithEncoderCRC(false))
		if err != nil {
			panic(err) // only for invalid options, which these are not
		}
		return enc
	}})
	return p.(*sync.Pool)
}

func (c zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	pool := zstdPool(zstdLevel(level))
	enc := pool.Get().(*zstd.Encoder)
	defer pool.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

func (c zstdCodec) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (c zstdCodec) CompressBound(n int64) int64   { return c.orig.CompressBound(n) }
func (c zstdCodec) Decode(dst, src []byte) []byte { return c.orig.Decode(dst, src) }

func (c zstdCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(c.orig, dst, src)
}

// The streaming side (not used for Parquet pages) stays arrow-go's.

func (c zstdCodec) NewReader(r io.Reader) io.ReadCloser {
	return c.orig.(compress.StreamingCodec).NewReader(r)
}

func (c zstdCodec) NewWriter(w io.Writer) io.WriteCloser {
	return c.orig.(compress.StreamingCodec).NewWriter(w)
}

func (c zstdCodec) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return c.orig.(compress.StreamingCodec).NewWriterLevel(w, level)
}
