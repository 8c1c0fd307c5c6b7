package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Compaction of a mirror: the rewrite, which runs off the stream. It reads
// a snapshot's live files and their position deletes, asks the policy
// (tiering.PlanCompaction) what is due, and writes the chosen data files'
// live rows into new files, remembering where each row went. Installing
// the result is the stream's (compact_install.go).
//
// iceberg-go's ExecuteCompactionGroup does a rewrite too, but it cannot
// say where a row went, which the key index needs, and it writes through
// its own Parquet writer; the rewrite here reads with iceberg-go's scanner
// (ReadTasks: the file projected onto the current schema) and writes with
// parquetx, like every other file of the bridge.

// rewritten is where a row of a rewritten file went: the index of its new
// file in rewrite.newData and its position there; file -1 when the row was
// deleted as of the snapshot read, and so dropped.
type rewritten struct {
	file int32
	pos  int64
}

// rewrite is a finished rewrite of a mirror as of snapshot base.
type rewrite struct {
	data       int                       // data files the policy saw
	oldData    []icego.DataFile          // data files rewritten
	oldDeletes []icego.DataFile          // the snapshot's delete files, all replaced
	newData    []icego.DataFile          // their replacements
	kept       []icego.DataFile          // the snapshot's deletes of files not rewritten, one file per spec and partition
	moved      map[string][]rewritten    // old file path → row → where it went
	bytesRead  int64                     // bytes of the data files rewritten
	written    int64                     // bytes of the new files
	deleted    map[string]map[int64]bool // the snapshot's deleted rows, by data file
	files      map[string]icego.DataFile // the snapshot's data files by path
	tier       bool                      // a tiering: the files move cold (tier.go)
	// dvs are a v3 table's deletion vectors as of the snapshot read, by
	// data file (see splitDVs); oldDeletes then holds its position delete
	// files alone.
	dvs map[string]icego.DataFile
}

// snapshotFiles reads a table's current snapshot's live data files (with
// their data sequence numbers) and delete files.
func snapshotFiles(tbl *table.Table, fs icebergio.IO) (data []icego.DataFile, seqs map[string]int64, deletes []icego.DataFile, err error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil, nil, nil
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("manifests of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	seqs = make(map[string]int64)
	for _, m := range manifests {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			switch df.ContentType() {
			case icego.EntryContentData:
				data = append(data, df)
				seqs[df.FilePath()] = e.SequenceNum()
			case icego.EntryContentPosDeletes:
				deletes = append(deletes, df)
			default:
				return nil, nil, nil, fmt.Errorf("%s has equality deletes, which the bridge does not write: another writer changed the table", strings.Join(tbl.Identifier(), "."))
			}
		}
	}
	return data, seqs, deletes, nil
}

// rewriteGroup is data files to merge, all in one partition directory
// (dir, under the table's data/; "" for an unpartitioned table) of one
// location (root: "" for the table's own, else a tiered table's cold
// root, see fileRoot), with the S3 storage class of its new files ("":
// the bucket's default).
type rewriteGroup struct {
	root  string
	dir   string
	class string
	paths []string
}

// planRewrite reads base's files and deletes and returns what the policy
// chose, with nothing written yet (nil: nothing is due). A partitioned
// table (a changelog: append-only, so without deletes) is planned per
// partition directory.
func planRewrite(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table, c tiering.CompactConfig) (*rewrite, []rewriteGroup, error) {
	data, seqs, deletes, err := snapshotFiles(base, fs)
	if err != nil {
		return nil, nil, err
	}
	r := &rewrite{data: len(data), oldDeletes: deletes, deleted: make(map[string]map[int64]bool), files: make(map[string]icego.DataFile)}
	for _, df := range deletes {
		if err := readPosDeletes(ctx, fs, df, r.deleted); err != nil {
			return nil, nil, err
		}
	}
	byDir := make(map[string][]tiering.FileStat)
	var dirs []string
	dirOf := map[string]string{}
	for _, df := range data {
		r.files[df.FilePath()] = df
		dir := "" // an unpartitioned table is planned whole, a partitioned one per spec, location and directory
		if !base.Spec().IsUnpartitioned() {
			// Files of two specs are never merged, whatever their directory.
			root, d := fileRoot(base, df.FilePath())
			dir = strconv.Itoa(int(df.SpecID())) + "|" + root + "\x00" + d
		}
		if _, ok := byDir[dir]; !ok {
			dirs = append(dirs, dir)
			dirOf[dir] = partitionDir(base, df.FilePath())
		}
		byDir[dir] = append(byDir[dir], tiering.FileStat{Path: df.FilePath(), Bytes: df.FileSizeBytes(), Rows: df.Count(), Deleted: int64(len(r.deleted[df.FilePath()])), Seq: seqs[df.FilePath()]})
	}
	if base.Spec().IsUnpartitioned() {
		plan := tiering.PlanCompaction(c, byDir[""], len(deletes))
		if !plan.Due() {
			return nil, nil, nil
		}
		return r, byRoot(base, plan.Data), nil
	}
	// A partitioned mirror's deletes are in its files' partitions: the
	// kept ones are written back there (see run).
	var groups []rewriteGroup
	for _, dir := range dirs {
		if plan := tiering.PlanCompaction(c, byDir[dir], len(deletes)); len(plan.Data) > 0 {
			groups = append(groups, byRoot(base, plan.Data)...)
		}
	}
	if len(groups) == 0 {
		return nil, nil, nil
	}
	return r, groups, nil
}

// partitionDir is the directory of a data file under the table's data/
// ("" for a file directly in it, or one elsewhere).
func partitionDir(tbl *table.Table, p string) string {
	rel, ok := strings.CutPrefix(p, tbl.Location()+"/data/")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return ""
}

// discard removes the files the rewrite wrote: no commit names them.
func (r *rewrite) discard(fs icebergio.WriteFileIO) {
	for _, df := range r.newData {
		removeFile(fs, df.FilePath())
	}
	for _, df := range r.kept {
		removeFile(fs, df.FilePath())
	}
}

// run does the rewrite of groups: the chosen data files' live rows
// into new files of about c.TargetBytes, and the deletes of the files not
// chosen into one delete file. On error it removes what it wrote.
func (r *rewrite) run(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table, c tiering.CompactConfig, groups []rewriteGroup) (err error) {
	r.moved = make(map[string][]rewritten)
	defer func() {
		if err != nil {
			r.discard(fs)
		}
	}()
	if base.Metadata().Version() >= 3 {
		r.splitDVs()
	}
	for _, g := range groups {
		if err := r.runGroup(ctx, fs, base, c, g); err != nil {
			return err
		}
	}
	for _, df := range r.newData {
		r.written += df.FileSizeBytes()
	}
	var kept []posDelete
	for p, rows := range r.deleted {
		if _, gone := r.moved[p]; gone {
			continue
		}
		if _, live := r.files[p]; !live {
			continue // a delete of a file no longer in the table
		}
		if _, ok := r.dvs[p]; ok {
			continue // its DV holds them, and stays
		}
		for pos := range rows {
			kept = append(kept, posDelete{path: p, pos: pos})
		}
	}
	if len(kept) > 0 {
		sortDeletes(kept)
		if r.kept, err = writeDeletesOf(ctx, fs, base, kept, r.fileRef, rewriteLayout(base)); err != nil {
			return err
		}
		for _, df := range r.kept {
			r.written += df.FileSizeBytes()
		}
	}
	crashPoint("compact-written")
	return nil
}

// runGroup rewrites one group's files into new files of its directory.
func (r *rewrite) runGroup(ctx context.Context, fs icebergio.WriteFileIO, base *table.Table, c tiering.CompactConfig, g rewriteGroup) error {
	out := &rewriteOut{fs: fs, tbl: base, root: g.root, dir: g.dir, class: g.class, target: c.TargetBytes, first: int32(len(r.newData)), spec: base.Spec()}
	out.sort, out.sortID = sortKeys(base)
	// A group's files are of one spec and partition directory: the new
	// files take the first one's spec and partition values.
	if src := r.files[g.paths[0]]; !base.Spec().IsUnpartitioned() {
		if s := base.Metadata().PartitionSpecByID(int(src.SpecID())); s != nil {
			out.spec, out.partition = *s, src.Partition()
		}
	}
	defer out.abort()
	for _, p := range g.paths {
		df := r.files[p]
		r.oldData = append(r.oldData, df)
		r.bytesRead += df.FileSizeBytes()
		moved, err := out.copyFile(ctx, df, r.deleted[p])
		if err != nil {
			r.newData = append(r.newData, out.done...)
			return err
		}
		r.moved[p] = moved
	}
	done, err := out.finish()
	r.newData = append(r.newData, done...)
	return err
}

// sortDeletes sorts deletes by path and position, as a delete file holds
// them.
func sortDeletes(dels []posDelete) {
	slices.SortFunc(dels, func(a, b posDelete) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return int(a.pos - b.pos)
	})
}

// rewriteOut writes a rewrite's rows into new data files, rolling to a new
// one past the target size.
//
// Its files follow the table's Parquet settings (see rewriteLayout).
type rewriteOut struct {
	fs    icebergio.WriteFileIO
	tbl   *table.Table
	root  string // location of the files ("": the table's; see fileRoot)
	dir   string // partition directory of the files (see partitionDir)
	class string // S3 storage class of the files ("": the bucket's default)
	// spec and partition are the files' (those of the group's files).
	spec      icego.PartitionSpec
	partition map[int]any
	first     int32 // index of the first file written in the rewrite's newData
	target    int64
	asc       *arrow.Schema
	w         *parquetx.ColumnWriter // open file, nil until rows come
	path      string
	rows      int64
	done      []icego.DataFile
	// sort are the keys the files' rows are sorted by, sortID their
	// order's id (see sortKeys); held the kept rows not written yet of
	// a sorted rewrite (compact_sort.go).
	sort   []parquetx.SortKey
	sortID int
	held   heldRows
}

// copyFile copies the live rows of df (deleted: its deleted rows) and
// returns where each of its rows went.
func (o *rewriteOut) copyFile(ctx context.Context, df icego.DataFile, deleted map[int64]bool) ([]rewritten, error) {
	task := table.FileScanTask{File: df, Start: 0, Length: df.FileSizeBytes()}
	_, recs, err := o.tbl.Scan(table.WithMaxConcurrency(1)).ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", df.FilePath(), err)
	}
	moved := make([]rewritten, 0, df.Count())
	for rec, err := range recs {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", df.FilePath(), err)
		}
		err = o.write(rec, deleted, &moved)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	if int64(len(moved)) != df.Count() {
		return nil, fmt.Errorf("read %s: %d rows, its manifest says %d", df.FilePath(), len(moved), df.Count())
	}
	return moved, nil
}

// write writes rec's rows that deleted does not hold (their positions
// follow on from moved's), and records where each row went.
func (o *rewriteOut) write(rec arrow.RecordBatch, deleted map[int64]bool, moved *[]rewritten) error {
	if o.sort != nil {
		return o.hold(rec, deleted, moved)
	}
	var keep [][2]int64 // runs of kept rows [from, to)
	base := int64(len(*moved))
	for i := range rec.NumRows() {
		if !deleted[base+i] {
			if err := o.open(); err != nil {
				return err
			}
			break
		}
	}
	for i := range rec.NumRows() {
		if deleted[base+i] {
			*moved = append(*moved, rewritten{file: -1})
			continue
		}
		*moved = append(*moved, rewritten{file: o.first + int32(len(o.done)), pos: o.rows})
		o.rows++
		if n := len(keep); n > 0 && keep[n-1][1] == i {
			keep[n-1][1] = i + 1
		} else {
			keep = append(keep, [2]int64{i, i + 1})
		}
	}
	if len(keep) == 0 {
		return nil
	}
	if err := o.w.NewRowGroup(); err != nil {
		return err
	}
	for c := range int(rec.NumCols()) {
		col, err := keptRows(rec.Column(c), keep)
		if err != nil {
			return err
		}
		err = o.w.WriteColumn(c, col)
		col.Release()
		if err != nil {
			return err
		}
	}
	if o.w.Bytes() >= o.target {
		return o.roll()
	}
	return nil
}

// keptRows returns the rows of a in the runs keep, in one array.
func keptRows(a arrow.Array, keep [][2]int64) (arrow.Array, error) {
	if len(keep) == 1 && keep[0][0] == 0 && keep[0][1] == int64(a.Len()) {
		a.Retain()
		return a, nil
	}
	parts := make([]arrow.Array, len(keep))
	for i, k := range keep {
		parts[i] = array.NewSlice(a, k[0], k[1])
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	out, err := array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("gather kept rows: %w", err)
	}
	return out, nil
}

// open opens the next output file when none is open.
func (o *rewriteOut) open() error {
	if o.w != nil {
		return nil
	}
	if err := o.schema(); err != nil {
		return err
	}
	o.path = rootedDataPath(o.tbl, o.root, o.dir)
	f, err := createWithClass(o.fs, o.path, o.class)
	if err != nil {
		return fmt.Errorf("create %s: %w", o.path, err)
	}
	if o.w, err = parquetx.NewColumnWriterWith(o.asc, f, o.path, rewriteLayout(o.tbl)); err != nil {
		_ = f.Close()
		return err
	}
	o.rows = 0
	return nil
}

// schema sets o.asc, the files' Arrow schema, when it is not set yet.
func (o *rewriteOut) schema() error {
	if o.asc != nil {
		return nil
	}
	asc, err := table.SchemaToArrowSchema(o.tbl.Schema(), nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema of %s: %w", strings.Join(o.tbl.Identifier(), "."), err)
	}
	o.asc = asc
	return nil
}

// roll closes the open file, if any.
func (o *rewriteOut) roll() error {
	if o.w == nil {
		return nil
	}
	w := o.w
	o.w = nil
	md, size, err := w.Close()
	if err != nil {
		removeFile(o.fs, o.path)
		return err
	}
	df, err := describeFile(md, o.path, size, o.tbl.Schema(), o.spec, o.partition, icego.EntryContentData, o.tbl.Properties(), o.sortID)
	if err != nil {
		removeFile(o.fs, o.path)
		return err
	}
	o.done = append(o.done, df)
	return nil
}

// finish closes the last file and returns every file written.
func (o *rewriteOut) finish() ([]icego.DataFile, error) {
	if err := o.writeHeld(); err != nil {
		return nil, err
	}
	if err := o.roll(); err != nil {
		return nil, err
	}
	return o.done, nil
}

// abort abandons the open file (after finish: nothing).
func (o *rewriteOut) abort() {
	o.held.release()
	if o.w != nil {
		o.w.Abort()
		removeFile(o.fs, o.path)
		o.w = nil
	}
}

// errCompactionGone is a compaction whose table changed under it (a
// TRUNCATE, a re-copy, a schema change): its files are dropped.
var errCompactionGone = errors.New("the table changed since the compaction read it")

// rewriteLayout is the Parquet settings of the files a compaction writes:
// the table's properties (a bad value is the default here; the stream's
// fileLayout has logged it), with a bloom filter on each identifier field
// (a mirror's key columns) as the mirror's own data files have.
func rewriteLayout(tbl *table.Table) parquetx.Options {
	opts, _ := parquetx.OptionsFromProperties(tbl.Properties())
	sc := tbl.Schema()
	var keys []string
	for _, id := range sc.IdentifierFieldIDs {
		if f, ok := sc.FindFieldByID(id); ok {
			keys = append(keys, f.Name)
		}
	}
	return withKeyBlooms(opts, keys)
}
