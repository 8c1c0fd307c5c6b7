package history

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A diff between two points of one line of history (from an ancestor of
// to, or the same snapshot) is the net change of each row, by key:
//
//   - inserted: the key is live at to and was not at from;
//   - deleted: the key was live at from and is not at to;
//   - updated: the key is live at both and some value differs.
//
// So a row inserted and deleted in between is absent, one updated and
// then deleted is deleted, one deleted and inserted again with other
// values is updated, and an update that left every value as it was (or a
// compaction that only moved rows) is no change: the net effect of the
// changelog's rows between the two watermarks, per key. A table kept by
// the whole row (no identifier fields) has no updates: each row is its
// own key, and a changed row is a deletion and an insertion.
//
// Only the files that changed are read: planning both snapshots lists
// their data files with the delete files that apply to each; a data file
// only to has adds rows, and one of from that is gone at to, or whose
// delete files differ, may have lost rows. Those files are read at both
// points (deletes applied by iceberg-go), and rows found at both cancel.

// Change kinds, as printed.
const (
	Inserted = "inserted"
	Deleted  = "deleted"
	Updated  = "updated"
)

// Change is one row's net change.
type Change struct {
	Kind          string
	Before, After []Cell // nil for an insertion or a deletion
}

// DiffResult is a diff's rows, sorted by key.
type DiffResult struct {
	From, To  *table.Snapshot
	Columns   []string // to's schema
	Key       []string // identifier fields; empty: the whole row
	Changes   []Change
	FilesRead int // data files read, at either point
}

// Count is how many changes of kind the diff has.
func (d *DiffResult) Count(kind string) int {
	n := 0
	for _, c := range d.Changes {
		if c.Kind == kind {
			n++
		}
	}
	return n
}

// Diff computes the changes from from to to (see above).
func Diff(ctx context.Context, tbl *table.Table, from, to Point) (*DiffResult, error) {
	name := strings.Join(tbl.Identifier(), ".")
	a, err := Resolve(tbl, from)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	b, err := Resolve(tbl, to)
	if err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	if !slices.ContainsFunc(ancestry(tbl.Metadata(), b), func(s *table.Snapshot) bool { return s.SnapshotID == a.SnapshotID }) {
		return nil, fmt.Errorf("table %s: --from %s (snapshot %d) is not an ancestor of --to %s (snapshot %d): a diff follows one line of history from older to newer (swap them, or see pg2iceberg snapshots --table %s)", name, from, a.SnapshotID, to, b.SnapshotID, name)
	}
	schema := snapshotSchema(tbl, b)
	res := &DiffResult{From: a, To: b, Columns: fieldNames(schema), Key: keyColumns(schema)}
	if a.SnapshotID == b.SnapshotID {
		return res, nil
	}
	ta, err := planByFile(ctx, tbl, a)
	if err != nil {
		return nil, err
	}
	tb, err := planByFile(ctx, tbl, b)
	if err != nil {
		return nil, err
	}
	var readA, readB []table.FileScanTask
	for path, tasks := range ta {
		other, ok := tb[path]
		if ok && deleteSet(tasks) == deleteSet(other) {
			continue // the same rows at both points
		}
		readA = append(readA, tasks...)
		if ok {
			readB = append(readB, other...)
		}
	}
	for path, tasks := range tb {
		if _, ok := ta[path]; !ok {
			readB = append(readB, tasks...)
		}
	}
	res.FilesRead = countFiles(readA) + countFiles(readB)
	before, err := readRows(ctx, tbl, a, readA, res.Columns)
	if err != nil {
		return nil, err
	}
	after, err := readRows(ctx, tbl, b, readB, res.Columns)
	if err != nil {
		return nil, err
	}
	res.Changes = pairChanges(before, after, keyIndexes(res.Columns, res.Key))
	return res, nil
}

// planByFile plans a scan of snap: its tasks by data file path.
func planByFile(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (map[string][]table.FileScanTask, error) {
	scan := tbl.Scan(table.WithSnapshotID(snap.SnapshotID))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan %s at snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
	}
	out := map[string][]table.FileScanTask{}
	for _, t := range tasks {
		out[t.File.FilePath()] = append(out[t.File.FilePath()], t)
	}
	return out, nil
}

// deleteSet names the delete files that apply to a data file's tasks.
func deleteSet(tasks []table.FileScanTask) string {
	var paths []string
	for _, t := range tasks {
		for _, group := range [][]icego.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, f := range group {
				paths = append(paths, f.FilePath())
			}
		}
	}
	slices.Sort(paths)
	return strings.Join(slices.Compact(paths), "\n")
}

func countFiles(tasks []table.FileScanTask) int {
	seen := map[string]bool{}
	for _, t := range tasks {
		seen[t.File.FilePath()] = true
	}
	return len(seen)
}

// diffRow is a row read for a diff: its cells in the diff's columns and
// its value as one string (equal rows, equal strings).
type diffRow struct {
	cells []Cell
	sig   string
}

// readRows reads tasks at snap (deletes applied) into rows of cols; a
// column snap's schema lacks is NULL.
func readRows(ctx context.Context, tbl *table.Table, snap *table.Snapshot, tasks []table.FileScanTask, cols []string) ([]diffRow, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	scan := tbl.Scan(table.WithSnapshotID(snap.SnapshotID))
	defer scan.Close()
	sc, batches, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read %s at snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
	}
	pos := make([]int, len(cols))
	for i, c := range cols {
		pos[i] = -1
		if idx := sc.FieldIndices(c); len(idx) > 0 {
			pos[i] = idx[0]
		}
	}
	var out []diffRow
	for rec, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("read %s at snapshot %d: %w", strings.Join(tbl.Identifier(), "."), snap.SnapshotID, err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := diffRow{cells: make([]Cell, len(cols))}
			for j, p := range pos {
				if p < 0 {
					r.cells[j] = Cell{Null: true}
					continue
				}
				r.cells[j] = cellOf(rec.Column(p), i)
			}
			r.sig = signature(r.cells, nil)
			out = append(out, r)
		}
		rec.Release()
	}
	return out, nil
}

// signature is cells (those at idx, all when nil) as one comparable string.
func signature(cells []Cell, idx []int) string {
	var vals []any
	if idx == nil {
		for _, c := range cells {
			vals = append(vals, c.JSON)
		}
	} else {
		for _, i := range idx {
			vals = append(vals, cells[i].JSON)
		}
	}
	b, _ := json.Marshal(vals)
	return string(b)
}

// pairChanges cancels rows found at both points and pairs the rest by key
// (key: positions of the key columns; nil: the whole row).
func pairChanges(before, after []diffRow, key []int) []Change {
	count := map[string]int{}
	for _, r := range after {
		count[r.sig]++
	}
	var gone []diffRow
	for _, r := range before {
		if count[r.sig] > 0 {
			count[r.sig]--
			continue
		}
		gone = append(gone, r)
	}
	var came []diffRow
	for _, r := range after {
		if count[r.sig] > 0 {
			count[r.sig]--
			came = append(came, r)
		}
	}
	keyOf := func(r diffRow) string {
		if key == nil {
			return r.sig
		}
		return signature(r.cells, key)
	}
	goneByKey := map[string][]diffRow{}
	for _, r := range gone {
		goneByKey[keyOf(r)] = append(goneByKey[keyOf(r)], r)
	}
	type keyed struct {
		key string
		c   Change
	}
	var out []keyed
	for _, r := range came {
		k := keyOf(r)
		if old := goneByKey[k]; key != nil && len(old) > 0 {
			out = append(out, keyed{k, Change{Kind: Updated, Before: old[0].cells, After: r.cells}})
			goneByKey[k] = old[1:]
			continue
		}
		out = append(out, keyed{k, Change{Kind: Inserted, After: r.cells}})
	}
	for k, rows := range goneByKey {
		for _, r := range rows {
			out = append(out, keyed{k, Change{Kind: Deleted, Before: r.cells}})
		}
	}
	slices.SortStableFunc(out, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	changes := make([]Change, len(out))
	for i, k := range out {
		changes[i] = k.c
	}
	return changes
}

// keyColumns is schema's identifier fields' names, in schema order.
func keyColumns(schema *icego.Schema) []string {
	var out []string
	for _, f := range schema.Fields() {
		if slices.Contains(schema.IdentifierFieldIDs, f.ID) {
			out = append(out, f.Name)
		}
	}
	return out
}

func keyIndexes(cols, key []string) []int {
	if len(key) == 0 {
		return nil
	}
	out := make([]int, len(key))
	for i, k := range key {
		out[i] = slices.Index(cols, k)
	}
	return out
}

// WriteDiff writes d in format: a change column, then the table's
// columns; an update is two rows, its old values (updated-from) and its
// new ones (updated-to), in table and csv, and one object with before and
// after in json.
func WriteDiff(w io.Writer, format string, d *DiffResult) error {
	if format == "json" {
		return writeDiffJSON(w, d)
	}
	out, err := NewOutput(w, format, append([]string{"change"}, d.Columns...))
	if err != nil {
		return err
	}
	row := func(kind string, cells []Cell) error {
		return out.Row(append([]Cell{{JSON: kind, Text: kind}}, cells...))
	}
	for _, c := range d.Changes {
		switch c.Kind {
		case Inserted:
			err = row(Inserted, c.After)
		case Deleted:
			err = row(Deleted, c.Before)
		default:
			if err = row("updated-from", c.Before); err == nil {
				err = row("updated-to", c.After)
			}
		}
		if err != nil {
			return err
		}
	}
	return out.Close()
}

func writeDiffJSON(w io.Writer, d *DiffResult) error {
	obj := func(cells []Cell) map[string]any {
		if cells == nil {
			return nil
		}
		m := make(map[string]any, len(cells))
		for i, c := range cells {
			m[d.Columns[i]] = c.JSON
		}
		return m
	}
	enc := json.NewEncoder(w)
	for _, c := range d.Changes {
		line := struct {
			Change string         `json:"change"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		}{c.Kind, obj(c.Before), obj(c.After)}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("write diff: %w", err)
		}
	}
	return nil
}
