package parquetx

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

func TestOptionsFromProperties(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  Options
		bad   []string // the properties reported, in order
	}{
		{props: nil, want: Options{}},
		{props: map[string]string{PropCodec: "zstd"}, want: Options{Codec: "zstd"}},
		{props: map[string]string{PropCodec: "SNAPPY"}, want: Options{Codec: "snappy"}},
		{props: map[string]string{PropCodec: "gzip", PropLevel: "9"}, want: Options{Codec: "gzip", Level: 9}},
		{props: map[string]string{PropCodec: "lz4"}, want: Options{Codec: "lz4"}},
		{props: map[string]string{PropCodec: "uncompressed"}, want: Options{Codec: "uncompressed"}},
		{props: map[string]string{PropCodec: "zstd", PropLevel: "19"}, want: Options{Codec: "zstd", Level: 19}},
		{props: map[string]string{PropLevel: "3"}, want: Options{Level: 3}},
		{props: map[string]string{PropCodec: "brotli"}, bad: []string{PropCodec}},
		{props: map[string]string{PropCodec: "zsdt", PropLevel: "3"}, want: Options{Level: 3}, bad: []string{PropCodec}},
		{props: map[string]string{PropLevel: "fast"}, bad: []string{PropLevel}},
		{props: map[string]string{PropLevel: "23"}, bad: []string{PropLevel}},
		{props: map[string]string{PropCodec: "gzip", PropLevel: "10"}, want: Options{Codec: "gzip"}, bad: []string{PropLevel}},
		{props: map[string]string{PropCodec: "snappy", PropLevel: "3"}, want: Options{Codec: "snappy"}, bad: []string{PropLevel}},
		{props: map[string]string{PropLevel: ""}, want: Options{}},
		{
			props: map[string]string{PropRowGroupBytes: "134217728", PropPageBytes: "65536", PropDictBytes: "1024", PropBloomMaxBytes: "4096", PropTargetBytes: "1048576"},
			want:  Options{RowGroupBytes: 128 << 20, PageBytes: 64 << 10, DictPageBytes: 1024, BloomMaxBytes: 4096, TargetFileBytes: 1 << 20},
		},
		{props: map[string]string{PropRowGroupBytes: "128MB"}, bad: []string{PropRowGroupBytes}},
		{props: map[string]string{PropPageBytes: "0"}, bad: []string{PropPageBytes}},
		{props: map[string]string{PropDictBytes: "-1"}, bad: []string{PropDictBytes}},
		{props: map[string]string{PropBloomMaxBytes: "16"}, bad: []string{PropBloomMaxBytes}},
		{props: map[string]string{PropTargetBytes: "512M"}, bad: []string{PropTargetBytes}},
		{
			props: map[string]string{PropBloomPrefix + "email": "true", PropBloomPrefix + "id": "false", PropFPPPrefix + "email": "0.05", PropDictPrefix + "hash": "false", PropDictPrefix + "kind": "true"},
			want:  Options{Bloom: map[string]bool{"email": true, "id": false}, BloomFPP: map[string]float64{"email": 0.05}, NoDictionary: []string{"hash"}},
		},
		{
			props: map[string]string{PropBloomPrefix + "email": "yes please", PropFPPPrefix + "email": "1.5", PropDictPrefix + "hash": "off"},
			bad:   []string{PropDictPrefix + "hash", PropBloomPrefix + "email", PropFPPPrefix + "email"},
		},
		{props: map[string]string{"write.parquet.unrelated": "x", "format-version": "2"}, want: Options{}},
	} {
		t.Run(fmt.Sprint(tc.props), func(t *testing.T) {
			got, problems := OptionsFromProperties(tc.props)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OptionsFromProperties(%v) = %+v, want %+v", tc.props, got, tc.want)
			}
			if len(problems) != len(tc.bad) {
				t.Fatalf("OptionsFromProperties(%v) problems %v, want one for each of %v", tc.props, problems, tc.bad)
			}
			for i, p := range problems {
				msg := p.Error()
				if !strings.Contains(msg, tc.bad[i]+"=") || !strings.Contains(msg, "using the default") {
					t.Errorf("problem %d = %q, want it to name %s and say the default is used", i, msg, tc.bad[i])
				}
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() of the parsed options = %v", err)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Codec: "brotli"}, `unknown compression codec "brotli"`},
		{Options{Codec: "lz4", Level: 2}, "codec lz4 has no compression level"},
		{Options{Level: 40}, "zstd compression level 40"},
		{Options{PageBytes: -1}, "page size -1 is negative"},
		{Options{BloomMaxBytes: 1}, "bloom filter size 1"},
		{Options{BloomFPP: map[string]float64{"id": 0}}, "of column id is not between 0 and 1"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v.Validate() = %v, want %q", tc.o, err, tc.want)
		}
		// The writer refuses them with an error, never arrow-go's panic.
		f, ferr := os.Create(filepath.Join(t.TempDir(), "bad.parquet"))
		if ferr != nil {
			t.Fatal(ferr)
		}
		asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		if _, err := NewWriterWith(asc, f, "bad.parquet", tc.o); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
			t.Errorf("NewWriterWith(%+v) = %v, want an error naming the file", tc.o, err)
		}
		_ = f.Close()
	}
}

// TestWriterOptions writes files with each codec, and bloom filters and a
// dictionary turned off on chosen columns, through both the flat writer
// and pqarrow's, and reads the settings back from the footers.
func TestWriterOptions(t *testing.T) {
	flat := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "email", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	nested := arrow.NewSchema(append(flat.Fields(), arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}), nil)
	want := map[string]compress.Compression{
		"zstd": compress.Codecs.Zstd, "snappy": compress.Codecs.Snappy, "gzip": compress.Codecs.Gzip,
		"lz4": compress.Codecs.Lz4Raw, "uncompressed": compress.Codecs.Uncompressed,
	}
	for _, asc := range []*arrow.Schema{flat, nested} {
		for codec, wantCodec := range want {
			t.Run(fmt.Sprintf("%d/%s", asc.NumFields(), codec), func(t *testing.T) {
				opts := Options{Codec: codec, Bloom: map[string]bool{"id": true, "email": true}, NoDictionary: []string{"kind"}}
				path := filepath.Join(t.TempDir(), "f.parquet")
				writeRows(t, asc, path, opts, 20_000)
				r, err := file.OpenParquetFile(path, false)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				rg := r.MetaData().RowGroup(0)
				for i := range 3 {
					cc, err := rg.ColumnChunk(i)
					if err != nil {
						t.Fatal(err)
					}
					name := asc.Field(i).Name
					if cc.Compression() != wantCodec {
						t.Errorf("column %s codec %v, want %v", name, cc.Compression(), wantCodec)
					}
					if hasBloom, wantBloom := cc.BloomFilterOffset() > 0, name != "kind"; hasBloom != wantBloom {
						t.Errorf("column %s bloom filter %v, want %v", name, hasBloom, wantBloom)
					}
					if dict, wantDict := cc.HasDictionaryPage(), name == "email"; dict != wantDict {
						t.Errorf("column %s dictionary %v, want %v", name, dict, wantDict)
					}
				}
			})
		}
	}
}

// writeRows writes n rows of asc (its first three fields id, email, kind)
// to path.
func writeRows(t testing.TB, asc *arrow.Schema, path string, opts Options, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriterWith(asc, f, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		w.Builder(0).(*array.Int64Builder).Append(int64(i))
		w.Builder(1).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", i%50))
		w.Builder(2).(*array.StringBuilder).Append(fmt.Sprintf("kind-%d", i))
		if asc.NumFields() > 3 {
			w.Builder(3).AppendNull()
		}
		if err := w.RowDone(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkKeyBloom measures what the default bloom filter on a key
// column costs a file of unique keys: compare -bench with and without.
func BenchmarkKeyBloom(b *testing.B) {
	asc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "email", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, name := range []string{"none", "key"} {
		opts := Options{}
		if name == "key" {
			opts.Bloom = map[string]bool{"id": true}
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				path := filepath.Join(b.TempDir(), "f.parquet")
				writeRows(b, asc, path, opts, 200_000)
				if st, err := os.Stat(path); err == nil {
					b.ReportMetric(float64(st.Size())/200_000, "B/row")
				}
			}
		})
	}
}
