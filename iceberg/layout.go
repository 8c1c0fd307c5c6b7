package iceberg

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// layout is a table's file settings as its properties last read said
// (see icebergTable.fileLayout).
type layout struct {
	mu   sync.Mutex       // guards key and opts: copy workers open files concurrently
	key  string           // the properties read, joined; "" before the first read
	opts parquetx.Options // what key said
}

// fileLayout returns the Parquet settings and target file size of the
// table's next file, from its current properties: a property set by
// another writer (Spark's ALTER TABLE ... SET TBLPROPERTIES) applies from
// the first file opened after the bridge loads the table's new metadata,
// at its next commit. A value that cannot be used is logged once, naming
// the table and property, and its default used: a typo in a property set
// outside the bridge must not stop it.
func (t *icebergTable) fileLayout() (parquetx.Options, int64) {
	props := t.tbl.Properties()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if strings.HasPrefix(k, "write.parquet.") || strings.HasPrefix(k, "pg2iceberg.parquet.") || k == parquetx.PropTargetBytes {
			b.WriteString(k + "=" + props[k] + "\n")
		}
	}
	t.layout.mu.Lock()
	defer t.layout.mu.Unlock()
	if key := b.String() + "."; key != t.layout.key {
		opts, problems := parquetx.OptionsFromProperties(props)
		for _, p := range problems {
			if t.log != nil {
				t.log.Warn("table property ignored", "table", t.name(), "problem", p)
			}
		}
		t.layout.key, t.layout.opts = key, opts
	}
	return t.layout.opts, t.layout.opts.TargetFileBytes
}

// dataFileLayout is fileLayout for a mirror's data file: a bloom filter on
// each key column unless the properties turn it off (a whole-row key,
// every column, has none by default).
func (m *mirror) dataFileLayout() (parquetx.Options, int64) {
	opts, target := m.fileLayout()
	if m.rel.WholeRow {
		return opts, target
	}
	keys := make([]string, len(m.keyCols))
	for j, i := range m.keyCols {
		keys[j] = m.rel.Columns[i].Name
	}
	return withKeyBlooms(opts, keys), target
}

// withKeyBlooms is opts with a bloom filter on each key column the
// properties do not decide themselves (they may turn one off).
func withKeyBlooms(opts parquetx.Options, keys []string) parquetx.Options {
	if len(keys) == 0 {
		return opts
	}
	bloom := maps.Clone(opts.Bloom)
	if bloom == nil {
		bloom = map[string]bool{}
	}
	for _, k := range keys {
		if _, set := bloom[k]; !set {
			bloom[k] = true
		}
	}
	opts.Bloom = bloom
	return opts
}

// deleteFileLayout is the Parquet settings of a position delete file: the
// table's codec and sizes, no bloom filters or column settings (they name
// data columns).
func deleteFileLayout(opts parquetx.Options) parquetx.Options {
	opts.Bloom, opts.BloomFPP, opts.NoDictionary = nil, nil, nil
	return opts
}

// full reports whether fw has reached target bytes (0: none). Its size
// changes only when a batch is written, so it is asked only then: the
// size of a file being written sums every open column chunk's bytes,
// which for the 40-column table asked after every row was 3% of the
// stream's CPU.
func full(fw *fileWriter, target int64) bool {
	return target > 0 && fw.rows()%parquetx.BatchRows == 0 && fw.bytes() >= target
}
