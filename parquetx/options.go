package parquetx

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Options are the Parquet settings of one file. The zero value is the
// defaults: zstd level 1, row groups of 32 MiB, pages of 1 MiB,
// dictionaries up to 64 KiB, no bloom filters.
type Options struct {
	// Codec is an Iceberg codec name: zstd (""), snappy, gzip, lz4 (LZ4_RAW
	// in Parquet, as Iceberg writes it) or uncompressed.
	Codec string
	// Level is the codec's level; 0 is zstd's 1 and the other codecs'
	// default.
	Level         int
	RowGroupBytes int64 // compressed bytes at which a row group ends; 0: 32 MiB
	PageBytes     int64 // 0: 1 MiB
	DictPageBytes int64 // dictionary size at which a column falls back to plain; 0: 64 KiB
	// NoDictionary are columns written without a dictionary.
	NoDictionary []string
	// Bloom says which columns have a split-block bloom filter (true) or
	// have none (false: a default turned off); BloomFPP is a column's false
	// positive probability (default 0.01), BloomMaxBytes a filter's size
	// limit (default 1 MiB).
	Bloom         map[string]bool
	BloomFPP      map[string]float64
	BloomMaxBytes int64
	// TargetFileBytes is the size at which the caller starts a new file
	// (Iceberg's write.target-file-size-bytes); 0: none. The writer itself
	// ignores it.
	TargetFileBytes int64
	// Sort are the keys a Writer sorts a file's rows by (nil: the order
	// written). A sorted file is held in memory until it is closed.
	Sort []SortKey
}

// The Parquet codec of each Iceberg codec name.
var codecs = map[string]compress.Compression{
	"zstd":         compress.Codecs.Zstd,
	"snappy":       compress.Codecs.Snappy,
	"gzip":         compress.Codecs.Gzip,
	"lz4":          compress.Codecs.Lz4Raw,
	"uncompressed": compress.Codecs.Uncompressed,
}

// The bounds of a bloom filter's size (arrow-go's).
const (
	minBloomBytes = 32
	maxBloomBytes = 128 << 20
)

// Validate returns every problem of o (errors.Join), nil without any.
func (o Options) Validate() error {
	var errs []error
	if _, ok := codecs[o.codecName()]; !ok {
		errs = append(errs, fmt.Errorf("unknown compression codec %q (use zstd, snappy, gzip, lz4 or uncompressed)", o.Codec))
	}
	if err := checkLevel(o.codecName(), o.Level); err != nil {
		errs = append(errs, err)
	}
	for what, n := range map[string]int64{"row group size": o.RowGroupBytes, "page size": o.PageBytes, "dictionary size": o.DictPageBytes} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("%s %d is negative", what, n))
		}
	}
	if o.BloomMaxBytes != 0 && (o.BloomMaxBytes < minBloomBytes || o.BloomMaxBytes > maxBloomBytes) {
		errs = append(errs, fmt.Errorf("bloom filter size %d is not between %d and %d bytes", o.BloomMaxBytes, minBloomBytes, maxBloomBytes))
	}
	for col, fpp := range o.BloomFPP {
		if !(fpp > 0 && fpp < 1) {
			errs = append(errs, fmt.Errorf("bloom filter false positive probability %v of column %s is not between 0 and 1", fpp, col))
		}
	}
	return errors.Join(errs...)
}

func (o Options) codecName() string {
	if o.Codec == "" {
		return "zstd"
	}
	return strings.ToLower(o.Codec)
}

// checkLevel checks a level for codec; 0 is the default of each.
func checkLevel(codec string, level int) error {
	switch {
	case level == 0:
	case codec == "zstd" && (level < 1 || level > 22):
		return fmt.Errorf("zstd compression level %d is not between 1 and 22", level)
	case codec == "gzip" && (level < 1 || level > 9):
		return fmt.Errorf("gzip compression level %d is not between 1 and 9", level)
	case codec != "zstd" && codec != "gzip":
		return fmt.Errorf("codec %s has no compression level (level %d)", codec, level)
	}
	return nil
}

// rowGroupBytes is the size at which a row group of o ends.
func (o Options) rowGroupBytes() int64 {
	if o.RowGroupBytes > 0 {
		return o.RowGroupBytes
	}
	return rowGroupTarget
}

// props returns the writer properties of o, which must be valid.
func (o Options) props() *parquet.WriterProperties {
	level := o.Level
	if level == 0 {
		// zstd's fastest level: about half the CPU of its default level,
		// which Parquet writing spends most of, for files of about the
		// same size (row groups of similar values compress well either way).
		level = 1
		if o.codecName() != "zstd" {
			level = compress.DefaultCompressionLevel
		}
	}
	dict := o.DictPageBytes
	if dict == 0 {
		// A column whose dictionary outgrows 64 KiB (unique keys, LSNs,
		// hashes) falls back to plain encoding early instead of hashing
		// every value of the row group; low-cardinality columns keep theirs.
		dict = 64 << 10
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codecs[o.codecName()]),
		parquet.WithCompressionLevel(level),
		parquet.WithStats(true),
		// Iceberg's Parquet mapping: decimals of precision <= 9 as INT32,
		// <= 18 as INT64, larger as FIXED_LEN_BYTE_ARRAY.
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxRowGroupLength(int64(rowGroupRows)),
		parquet.WithDictionaryPageSizeLimit(dict),
		parquet.WithAllocator(dataAlloc),
	}
	if o.PageBytes > 0 {
		opts = append(opts, parquet.WithDataPageSize(o.PageBytes))
	}
	for _, col := range o.NoDictionary {
		opts = append(opts, parquet.WithDictionaryFor(col, false))
	}
	opts = append(opts, o.bloomProps()...)
	return parquet.NewWriterProperties(opts...)
}

// bloomProps are the bloom filter settings of o. A filter is adaptive:
// of several candidate sizes up to the limit, the smallest that keeps the
// false positive probability for the values seen is written, so a small
// row group does not carry a 1 MiB filter.
func (o Options) bloomProps() []parquet.WriterProperty {
	var opts []parquet.WriterProperty
	for col, on := range o.Bloom {
		opts = append(opts, parquet.WithBloomFilterEnabledFor(col, on))
		if on {
			opts = append(opts, parquet.WithAdaptiveBloomFilterEnabledFor(col, true))
		}
	}
	for col, fpp := range o.BloomFPP {
		opts = append(opts, parquet.WithBloomFilterFPPFor(col, fpp))
	}
	if o.BloomMaxBytes > 0 {
		opts = append(opts, parquet.WithMaxBloomFilterBytes(o.BloomMaxBytes))
	}
	return opts
}

// writerProps are the Parquet settings of a file written with the
// defaults.
func writerProps() *parquet.WriterProperties { return Options{}.props() }

// The Iceberg table properties that set Options, and pg2iceberg's own.
const (
	PropCodec         = "write.parquet.compression-codec"
	PropLevel         = "write.parquet.compression-level"
	PropRowGroupBytes = "write.parquet.row-group-size-bytes"
	PropPageBytes     = "write.parquet.page-size-bytes"
	PropDictBytes     = "write.parquet.dict-size-bytes"
	PropBloomMaxBytes = "write.parquet.bloom-filter-max-bytes"
	PropTargetBytes   = "write.target-file-size-bytes"
	PropBloomPrefix   = "write.parquet.bloom-filter-enabled.column."
	PropFPPPrefix     = "write.parquet.bloom-filter-fpp.column."
	PropDictPrefix    = "pg2iceberg.parquet.dictionary-enabled.column."
)

// OptionsFromProperties reads Options from a table's properties. A value
// it cannot use is left at its default and reported in problems, each
// naming the property: a typo in a table's properties must not stop the
// writing of the table.
func OptionsFromProperties(props map[string]string) (o Options, problems []error) {
	bad := func(key, v, why string) { problems = append(problems, propertyProblem(key, v, why)) }
	if v, ok := props[PropCodec]; ok {
		if _, known := codecs[strings.ToLower(v)]; known {
			o.Codec = strings.ToLower(v)
		} else {
			bad(PropCodec, v, "not a codec (use zstd, snappy, gzip, lz4 or uncompressed)")
		}
	}
	if v, ok := props[PropLevel]; ok && v != "" {
		if n, err := strconv.Atoi(v); err != nil {
			bad(PropLevel, v, "not an integer")
		} else if err := checkLevel(o.codecName(), n); err != nil {
			bad(PropLevel, v, err.Error())
		} else {
			o.Level = n
		}
	}
	sizes := []struct {
		key      string
		dst      *int64
		min, max int64
	}{
		{PropRowGroupBytes, &o.RowGroupBytes, 1, math.MaxInt64},
		{PropPageBytes, &o.PageBytes, 1, math.MaxInt64},
		{PropDictBytes, &o.DictPageBytes, 1, math.MaxInt64},
		{PropBloomMaxBytes, &o.BloomMaxBytes, minBloomBytes, maxBloomBytes},
		{PropTargetBytes, &o.TargetFileBytes, 1, math.MaxInt64},
	}
	for _, s := range sizes {
		v, ok := props[s.key]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < s.min || n > s.max {
			bad(s.key, v, fmt.Sprintf("not a number of bytes from %d to %d", s.min, s.max))
		} else {
			*s.dst = n
		}
	}
	problems = append(problems, o.columnProperties(props)...)
	return o, problems
}

// propertyProblem is a property value OptionsFromProperties cannot use.
func propertyProblem(key, v, why string) error {
	return fmt.Errorf("table property %s=%q: %s; using the default", key, v, why)
}

// columnProperties reads the per-column properties into o.
func (o *Options) columnProperties(props map[string]string) (problems []error) {
	bad := func(key, v, why string) { problems = append(problems, propertyProblem(key, v, why)) }
	for _, key := range slices.Sorted(maps.Keys(props)) {
		v := props[key]
		switch {
		case strings.HasPrefix(key, PropBloomPrefix), strings.HasPrefix(key, PropDictPrefix):
			on, err := strconv.ParseBool(v)
			switch {
			case err != nil:
				bad(key, v, "use true or false")
			case strings.HasPrefix(key, PropDictPrefix):
				if !on {
					o.NoDictionary = append(o.NoDictionary, strings.TrimPrefix(key, PropDictPrefix))
				}
			default:
				if o.Bloom == nil {
					o.Bloom = map[string]bool{}
				}
				o.Bloom[strings.TrimPrefix(key, PropBloomPrefix)] = on
			}
		case strings.HasPrefix(key, PropFPPPrefix):
			fpp, err := strconv.ParseFloat(v, 64)
			if err != nil || !(fpp > 0 && fpp < 1) {
				bad(key, v, "not a probability between 0 and 1")
				continue
			}
			if o.BloomFPP == nil {
				o.BloomFPP = map[string]float64{}
			}
			o.BloomFPP[strings.TrimPrefix(key, PropFPPPrefix)] = fpp
		}
	}
	return problems
}
