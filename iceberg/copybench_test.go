package iceberg

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// nopCloser is a writer that closes as a no-op.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// BenchmarkCopyToParquet runs a binary copy of the bench's narrow table
// (serial id, k = id % 1000, md5 text, one timestamp) through the copy
// path into Parquet (discarded): parse, key, values, Parquet and zstd.
func BenchmarkCopyToParquet(b *testing.B) {
	const rows = 1 << 19
	bin := []byte("PGCOPY\n\377\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	field := func(v []byte) {
		bin = append(bin, byte(len(v)>>24), byte(len(v)>>16), byte(len(v)>>8), byte(len(v)))
		bin = append(bin, v...)
	}
	be := func(v uint64, n int) []byte {
		out := make([]byte, n)
		for i := n - 1; i >= 0; i, v = i-1, v>>8 {
			out[i] = byte(v)
		}
		return out
	}
	for i := range rows {
		id := int64(1 + i)
		h := md5.Sum(fmt.Appendf(nil, "%d", id))
		bin = append(bin, 0, 4)
		field(be(uint64(id), 8))
		field(be(uint64(id%1000), 4))
		field([]byte(hex.EncodeToString(h[:])))
		field(be(817_000_000_000_000, 8))
	}
	bin = append(bin, 0xff, 0xff)
	if err := parquetx.UseFastZstd(); err != nil {
		b.Fatal(err)
	}
	m, asc := narrowMirror(b)
	b.SetBytes(int64(len(bin)))
	var size int64
	w := &CopyWriter{m: m}
	for b.Loop() {
		pw, err := parquetx.NewWriter(asc, nopCloser{io.Discard}, "discard")
		if err != nil {
			b.Fatal(err)
		}
		fw := &fileWriter{path: "discard", pw: pw}
		w.keys = w.keys.Recycle()
		var p decode.CopyBinaryParser
		err = p.Feed(bin, 4, func(tup decode.Tuple) error {
			kb, err := m.appendKey(w.keys.Tail(), tup)
			if err != nil {
				return err
			}
			if err := m.appendRow(fw.builder, tup); err != nil {
				return err
			}
			w.keys.Push(kb)
			return fw.pw.RowDone()
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, size, err = pw.Close(); err != nil {
			b.Fatal(err)
		}
		x := keyindex.New()
		if _, ok := x.AddAll(&w.keys, 0); !ok {
			b.Fatal("duplicate key")
		}
	}
	b.ReportMetric(float64(size)/rows, "B/row")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
