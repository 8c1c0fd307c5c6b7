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
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// dvFixture is a sink over a SQLite catalog mirroring public.t (id key,
// v text) with the configuration's format_version, and no compaction but
// those a test starts (compactBetween).
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
	rules, err := mapping.ParseOverrides([]byte("tables:\n  - table: \"*\"\n    format_version: " + strconv.Itoa(version) + "\n    compaction:\n      enabled: false\n"))
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

// restartDV is a new fixture over the warehouse wh (a restart of the
// bridge, its key index rebuilt from the table), its changes from lsn on.
func restartDV(t *testing.T, wh string, version int, lsn decode.LSN) *dvFixture {
	t.Helper()
	f := newDVFixture(t, wh, version)
	f.lsn = lsn
	return f
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
// deletion vector of one of its data files and no data file has two; it
// returns how many there are.
func checkDVs(t *testing.T, tbl *table.Table) int {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	data, dels, err := liveFiles(tbl, fs)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, df := range data {
		live[df.FilePath()] = true
	}
	seen := map[string]bool{}
	for _, df := range dels {
		if !table.IsDeletionVector(df) {
			t.Errorf("delete file %s is %s, want a deletion vector", df.FilePath(), df.FileFormat())
			continue
		}
		ref := *df.ReferencedDataFile()
		if !live[ref] {
			t.Errorf("deletion vector %s of %s, which is not a live data file", df.FilePath(), ref)
		}
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
	f.checkIndex(len(want))
	f.flush("-5", "~7 g2")
	f.expect("after the rebuild", "2=b2", "40=d5", "7=g2")
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
	f = restartDV(t, wh, 3, 2000)
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

// dvCompactOldest is a compaction policy that rewrites the oldest small
// file with deletes alone (MaxRewriteBytes 1), so the other files keep
// their deletion vectors.
var dvCompactOldest = tiering.CompactConfig{Enabled: true, TargetBytes: 1 << 30, MinInputFiles: 2, MaxLiveFiles: 1000, DeleteRatio: 0.99, MaxDeleteFiles: 1000, MaxRewriteBytes: 1}

// compactBetween starts a compaction of the mirror under c, waits for its
// rewrite, then flushes changes (deletes committed while it ran), after
// which the stream installs it; it fails unless exactly one was installed.
func (f *dvFixture) compactBetween(c tiering.CompactConfig, changes ...string) {
	f.t.Helper()
	m := f.s.tables[f.rel.ID].mirror
	before := f.s.stats.Compactions.Load()
	m.startCompaction(c, nil)
	j := m.compact.job
	<-j.done
	if j.err != nil || j.out == nil {
		f.t.Fatalf("compaction job: out %v, error %v; want a rewrite", j.out, j.err)
	}
	f.flush(changes...)
	if got := f.s.stats.Compactions.Load() - before; got != 1 || f.s.stats.CompactionFailures.Load() != 0 {
		f.t.Fatalf("compactions installed %d, failed %d; want 1 and 0", got, f.s.stats.CompactionFailures.Load())
	}
}

// expect fails unless the mirror reads want (see rows) at the point what
// names, and returns the table.
func (f *dvFixture) expect(what string, want ...string) *table.Table {
	f.t.Helper()
	tbl, got := f.rows()
	if !slices.Equal(got, want) {
		f.t.Errorf("%s: mirror = %v, want %v", what, got, want)
	}
	return tbl
}

// checkIndex fails unless the key index, as moved by the flushes and
// compactions, and one rebuilt from the table (its DVs read) hold want
// rows each.
func (f *dvFixture) checkIndex(want int) {
	f.t.Helper()
	m := f.s.tables[f.rel.ID].mirror
	if n := m.index.Len(); n != want {
		f.t.Errorf("key index: %d rows, want %d", n, want)
	}
	if err := m.rebuildIndex(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	if n := m.index.Len(); n != want {
		f.t.Errorf("key index rebuilt: %d rows, want %d", n, want)
	}
}

// A v3 mirror compacted while streaming: the rewritten file's live rows
// move to a new file without its DV, the other files keep theirs, and the
// deletes committed while the rewrite ran (of rewritten rows: a DV of the
// new file; of other rows: their files' DVs) all hold after the install.
func TestDeletionVectorsCompaction(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	f := newDVFixture(t, wh, 3)
	f.flush("+1 a", "+2 b", "+3 c", "+4 d", "+5 e")
	f.flush("~2 b2", "-3", "+6 f", "+7 g", "+8 h")
	f.flush("-6", "~7 g2", "-1")
	f.compactBetween(dvCompactOldest, "-4", "~8 h2", "~5 e2")
	tbl, got := f.rows()
	want := []string{"2=b2", "5=e2", "7=g2", "8=h2"}
	if !slices.Equal(got, want) {
		t.Errorf("after the compaction: mirror = %v, want %v", got, want)
	}
	checkDVs(t, tbl)
	f.checkIndex(len(want))
	// Deletes of the rewritten rows' new places, after the install.
	f.flush("-2", "~5 e3", "+9 i")
	f.expect("after more flushes", "5=e3", "7=g2", "8=h2", "9=i")
	// pg2iceberg maintain's compaction of the v3 table: every DV applied
	// and gone; a restarted stream (its key index rebuilt) goes on.
	rep, err := CompactOnce(context.Background(), f.cat, table.Identifier{"public", "t"}, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DeleteFilesBefore == 0 || rep.DeleteFilesAfter != 0 || rep.DataFilesAfter != 1 {
		t.Errorf("CompactOnce = %+v, want DVs before, one data file and no delete file after", rep)
	}
	f.expect("after CompactOnce", "5=e3", "7=g2", "8=h2", "9=i")
	f = restartDV(t, wh, 3, 3000)
	f.flush("-7", "~8 h3")
	f.expect("after CompactOnce and a flush", "5=e3", "8=h3", "9=i")
}

// A mirror upgraded from v2 and compacted: the position delete files go,
// a file not rewritten that only they deleted rows of gets a DV of those
// rows, and a later DV of it replaces that one.
func TestDeletionVectorsCompactionUpgraded(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	f := newDVFixture(t, wh, 2)
	f.flush("+1 a", "+2 b", "+3 c", "+4 d")
	f.flush("+5 e", "+6 f", "+7 g", "+8 h", "-1")
	f.flush("-5")
	f = restartDV(t, wh, 3, 2000)
	f.compactBetween(dvCompactOldest, "-2")
	tbl, got := f.rows()
	want := []string{"3=c", "4=d", "6=f", "7=g", "8=h"}
	if !slices.Equal(got, want) {
		t.Errorf("after the compaction: mirror = %v, want %v", got, want)
	}
	if n := checkDVs(t, tbl); n != 2 {
		t.Errorf("%d DVs, want 2 (the rewritten file's later delete, the other file's old deletes)", n)
	}
	f.checkIndex(len(want))
	f.flush("-6", "~3 c2")
	tbl, got = f.rows()
	if want := []string{"3=c2", "4=d", "7=g", "8=h"}; !slices.Equal(got, want) {
		t.Errorf("after a flush: mirror = %v, want %v", got, want)
	}
	checkDVs(t, tbl)
}
