package iceberg

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// dvFixture is a sink over a SQLite catalog mirroring public.t (id key,
// v text) with the configuration's format_version.
type dvFixture struct {
	t   *testing.T
	cat catalog.Catalog
	s   *Sink
	rel *decode.Relation
	lsn decode.LSN
}

func newDVFixture(t *testing.T, wh string, version int) *dvFixture {
	t.Helper()
	f, err := newDVFixtureErr(wh, version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseCatalog(f.cat) })
	f.t = t
	return f
}

func newDVFixtureErr(wh string, version int) (*dvFixture, error) {
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, CatalogConfig{Warehouse: wh})
	if err != nil {
		return nil, err
	}
	rules, err := mapping.ParseOverrides([]byte("tables:\n  - table: \"*\"\n    format_version: " + strconv.Itoa(version) + "\n"))
	if err != nil {
		return nil, err
	}
	rel := &decode.Relation{ID: 7, Schema: "public", Name: "t", Columns: []decode.Column{
		{Name: "id", TypeOID: 20, TypeName: "int8", Key: true, NotNull: true},
		{Name: "v", TypeOID: 25, TypeName: "text"},
	}}
	s := NewSink(cat, Config{Rules: rules, NoChangelog: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.AddTable(ctx, rel); err != nil {
		CloseCatalog(cat)
		return nil, err
	}
	return &dvFixture{cat: cat, s: s, rel: rel, lsn: 1000}, nil
}

func dvText(v string) decode.Datum { return decode.Datum{Kind: decode.Text, Data: []byte(v)} }

// flush applies changes as one transaction and flushes; each change is
// "+id v" (insert), "~id v" (update), "-id" (delete) or ">old new v" (a key
// change).
func (f *dvFixture) flush(changes ...string) {
	f.t.Helper()
	ctx := context.Background()
	f.lsn += 10
	f.s.Begin(1, f.lsn, time.Now())
	for _, c := range changes {
		var ch decode.Change
		var a, b, v string
		switch c[0] {
		case '+', '~':
			parseWords(c[1:], &a, &v)
			ch = decode.Change{Op: decode.Insert, Rel: f.rel, After: decode.Tuple{dvText(a), dvText(v)}}
			if c[0] == '~' {
				ch.Op, ch.Before = decode.Update, decode.Tuple{dvText(a), dvText("")}
			}
		case '-':
			parseWords(c[1:], &a)
			ch = decode.Change{Op: decode.Delete, Rel: f.rel, Before: decode.Tuple{dvText(a), dvText("")}}
		case '>':
			parseWords(c[1:], &a, &b, &v)
			ch = decode.Change{Op: decode.Update, Rel: f.rel, Before: decode.Tuple{dvText(a), dvText("")}, After: decode.Tuple{dvText(b), dvText(v)}}
		}
		if err := f.s.Change(&ch); err != nil {
			f.t.Fatalf("change %q: %v", c, err)
		}
	}
	if _, _, err := f.s.Commit(ctx, f.lsn+5); err != nil {
		f.t.Fatal(err)
	}
	if err := f.s.Flush(ctx); err != nil {
		f.t.Fatalf("flush %v: %v", changes, err)
	}
}

func parseWords(s string, out ...*string) {
	words := strings.Fields(s)
	for i := range out {
		*out[i] = words[i]
	}
}

// rows reads the mirror with iceberg-go's scanner: "id=v" sorted.
func (f *dvFixture) rows() (*table.Table, []string) {
	f.t.Helper()
	ctx := context.Background()
	tbl, err := f.cat.LoadTable(ctx, table.Identifier{"public", "t"})
	if err != nil {
		f.t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("id", "v")).ToArrowTable(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer at.Release()
	var out []string
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids, vs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, strconv.FormatInt(ids.Value(i), 10)+"="+vs.Value(i))
		}
	}
	slices.Sort(out)
	return tbl, out
}

// checkDVs fails unless every delete file of tbl's current snapshot is a
// deletion vector and no data file has two; it returns how many there are.
func checkDVs(t *testing.T, tbl *table.Table) int {
	t.Helper()
	dels := liveDeletes(t, tbl)
	seen := map[string]bool{}
	for _, df := range dels {
		if !table.IsDeletionVector(df) {
			t.Errorf("delete file %s is %s, want a deletion vector", df.FilePath(), df.FileFormat())
			continue
		}
		ref := *df.ReferencedDataFile()
		if seen[ref] {
			t.Errorf("data file %s has two live deletion vectors", ref)
		}
		seen[ref] = true
	}
	return len(dels)
}

func TestDeletionVectorsFlushes(t *testing.T) {
	f := newDVFixture(t, filepath.Join(t.TempDir(), "wh"), 3)
	f.flush("+1 a", "+2 b", "+3 c", "+4 d", "+5 e")
	tbl, _ := f.rows()
	if v := tbl.Metadata().Version(); v != 3 {
		t.Fatalf("format version %d, want 3", v)
	}
	// Deletes of the first file; an insert deleted in its own flush.
	f.flush("~2 b2", "-3", "+6 f", "-6")
	// More deletes of the first file: its DV is replaced by one with both.
	f.flush("-1", ">4 40 d4", "~40 d5", "+7 g")
	tbl, got := f.rows()
	want := []string{"2=b2", "40=d5", "5=e", "7=g"}
	if !slices.Equal(got, want) {
		t.Errorf("mirror = %v, want %v", got, want)
	}
	if n := checkDVs(t, tbl); n == 0 {
		t.Errorf("no deletion vectors in the current snapshot")
	}
	// The key index rebuilt from the table (DVs read) agrees.
	m := f.s.tables[f.rel.ID].mirror
	if err := m.rebuildIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := m.index.Len(); n != len(want) {
		t.Errorf("key index rebuilt: %d rows, want %d", n, len(want))
	}
	f.flush("-5", "~7 g2")
	if _, got = f.rows(); !slices.Equal(got, []string{"2=b2", "40=d5", "7=g2"}) {
		t.Errorf("after the rebuild: mirror = %v", got)
	}
}

// A v2 mirror with position deletes configured as 3: the next start
// upgrades it, the old position delete files stay live, and the first DV
// of a data file they delete rows of holds those rows too (a reader takes
// the DV alone).
func TestDeletionVectorsUpgrade(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	f := newDVFixture(t, wh, 2)
	f.flush("+1 a", "+2 b", "+3 c", "+4 d")
	f.flush("-2", "~3 c2")
	tbl, _ := f.rows()
	if v := tbl.Metadata().Version(); v != 2 {
		t.Fatalf("format version %d, want 2", v)
	}
	f = newDVFixture(t, wh, 3)
	f.lsn = 2000
	tbl, _ = f.rows()
	if v := tbl.Metadata().Version(); v != 3 {
		t.Fatalf("after the restart: format version %d, want 3", v)
	}
	f.flush("-1", "~4 d2", "+5 e")
	f.flush("-5", "+6 f")
	tbl, got := f.rows()
	if want := []string{"3=c2", "4=d2", "6=f"}; !slices.Equal(got, want) {
		t.Errorf("mirror = %v, want %v", got, want)
	}
	var pos, dvs int
	for _, df := range liveDeletes(t, tbl) {
		if table.IsDeletionVector(df) {
			dvs++
		} else {
			pos++
		}
	}
	if pos == 0 || dvs == 0 {
		t.Errorf("live delete files: %d position delete files, %d DVs; want both", pos, dvs)
	}
	if _, err := newDVFixtureErr(wh, 2); err == nil || !strings.Contains(err.Error(), "cannot downgrade") {
		t.Errorf("a v3 mirror configured as 2: error %v, want one saying Iceberg cannot downgrade", err)
	}
}

// liveDeletes returns the delete files of tbl's current snapshot.
func liveDeletes(t *testing.T, tbl *table.Table) []icego.DataFile {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, dels, err := liveFiles(tbl, fs)
	if err != nil {
		t.Fatal(err)
	}
	return dels
}
