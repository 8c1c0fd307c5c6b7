package iceberg

import (
	"context"
	"fmt"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// Sort order of a mirror's data files. The table's default sort order
// (the configuration's sort: fields, or one another writer set, Spark's
// ALTER TABLE ... WRITE ORDERED BY) sorts the rows of each data file the
// bridge writes for it: a flush's, a copy's, a compaction's. A file is
// sorted when it is closed (parquetx holds a sorted file's rows until
// then), and the key index and the batch's position deletes are moved to
// the sorted positions before anything reads them (batch.resorted), so a
// position delete names the row it means.

// PropSort is the table property recording the configuration's sort
// fields last applied to the table (see followConfiguredSort).
const PropSort = "pg2iceberg.sort"

// ParseSortField parses one field of a configured sort order: a column,
// then optionally asc or desc, then optionally nulls first or nulls last
// ("created_at", "id desc", "name asc nulls last"). Ascending sorts put
// nulls first, descending ones last, as Iceberg's defaults.
func ParseSortField(s string) (col string, dir table.SortDirection, nulls table.NullOrder, err error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return "", "", "", fmt.Errorf("empty sort field")
	}
	col, dir, rest := words[0], table.SortASC, words[1:]
	if len(rest) > 0 {
		switch strings.ToLower(rest[0]) {
		case "asc":
			rest = rest[1:]
		case "desc":
			dir, rest = table.SortDESC, rest[1:]
		}
	}
	nulls = table.NullsFirst
	if dir == table.SortDESC {
		nulls = table.NullsLast
	}
	switch strings.ToLower(strings.Join(rest, " ")) {
	case "":
	case "nulls first":
		nulls = table.NullsFirst
	case "nulls last":
		nulls = table.NullsLast
	default:
		return "", "", "", fmt.Errorf("sort field %q: expected a column, then asc or desc, then nulls first or nulls last, e.g. \"created_at desc nulls last\"", s)
	}
	return col, dir, nulls, nil
}

// ConfiguredSortOrder is the sort order the configuration's fields give
// over schema sc (nil fields: unsorted). A column the schema lacks, or
// one of a type rows cannot be sorted by (a list, map or struct), is an
// error naming it.
func ConfiguredSortOrder(sc *icego.Schema, fields []string) (table.SortOrder, error) {
	if len(fields) == 0 {
		return table.UnsortedSortOrder, nil
	}
	var out []table.SortField
	for _, s := range fields {
		col, dir, nulls, err := ParseSortField(s)
		if err != nil {
			return table.SortOrder{}, err
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return table.SortOrder{}, fmt.Errorf("sort field %q: the table has no column %s", s, col)
		}
		if _, nested := f.Type.(icego.NestedType); nested {
			return table.SortOrder{}, fmt.Errorf("sort field %q: column %s is of type %s; sort by a column of a primitive type", s, col, f.Type)
		}
		out = append(out, table.SortField{SourceIDs: []int{f.ID}, Transform: icego.IdentityTransform{}, Direction: dir, NullOrder: nulls})
	}
	order, err := table.NewSortOrder(table.InitialSortOrderID, out)
	if err != nil {
		return table.SortOrder{}, fmt.Errorf("sort order %s: %w", strings.Join(fields, ", "), err)
	}
	return order, nil
}

// configChanged reports whether the configuration's fields differ from
// those last applied to the table, which prop records (none recorded: the
// table was never configured, which equals no fields), and returns them
// as prop records them.
func (t *icebergTable) configChanged(prop string, fields []string) (want string, changed bool) {
	want = strings.Join(fields, ", ")
	v, ok := t.tbl.Properties()[prop]
	return want, ok && v != want || !ok && want != ""
}

// followConfiguredSort makes the configuration's sort fields the table's
// default sort order when they changed since they were last applied
// (PropSort). When the configuration did not change, the table's order
// stands, one another writer set included.
func (t *icebergTable) followConfiguredSort(ctx context.Context, fields []string) error {
	want, changed := t.configChanged(PropSort, fields)
	if !changed {
		return nil
	}
	order, err := ConfiguredSortOrder(t.tbl.Schema(), fields)
	if err != nil {
		return fmt.Errorf("%s: %w", t.name(), err)
	}
	txn := t.tbl.NewTransaction()
	if err := txn.ReplaceSortOrder(order); err != nil {
		return fmt.Errorf("sort %s by %s: %w", t.name(), want, err)
	}
	if t.log != nil {
		t.log.Info("sort order changed by the configuration", "table", t.name(), "from", t.tbl.SortOrder().String(), "to", want)
	}
	return t.commitTxn(ctx, txn, "sort", icego.Properties{PropSort: want})
}

// sortKeys returns the keys a data file of tbl's current schema is sorted
// by, from its default sort order, and the order's id to record on the
// file (0: the file is not known to be in the order). A field on a
// column that is not top-level or not sortable, or of a transform that
// does not keep order (bucket, void), ends the keys there, and the file
// is not claimed sorted. A field of year, month, day, hour or truncate is
// met by sorting on its column, when it is the last one followed: a sort
// by a column orders it by any transform that keeps order, but rows equal
// in the transform are then in column order, not that of the fields after
// it.
func sortKeys(tbl *table.Table) ([]parquetx.SortKey, int) {
	order := tbl.SortOrder()
	if order.IsUnsorted() {
		return nil, 0
	}
	sc := tbl.Schema()
	top := make(map[int]int, len(sc.Fields()))
	for i, f := range sc.Fields() {
		top[f.ID] = i
	}
	var keys []parquetx.SortKey
	for i, f := range order.Fields() {
		col, ok := top[f.SourceID()]
		if !ok || len(f.SourceIDs) != 1 {
			return keys, 0
		}
		if _, nested := sc.Field(col).Type.(icego.NestedType); nested {
			return keys, 0
		}
		k := parquetx.SortKey{Column: col, Desc: f.Direction == table.SortDESC, NullsFirst: f.NullOrder == table.NullsFirst}
		switch f.Transform.(type) {
		case icego.IdentityTransform:
			keys = append(keys, k)
			continue
		case icego.YearTransform, icego.MonthTransform, icego.DayTransform, icego.HourTransform, icego.TruncateTransform:
			keys = append(keys, k)
			if i == order.Len()-1 {
				return keys, order.OrderID()
			}
		}
		return keys, 0
	}
	return keys, order.OrderID()
}

// resorted moves what points at rows of fw, the batch's data file id
// just closed and sorted, to the rows' sorted positions: the batch's key
// index entries and its position deletes. keys are the keys of fw's rows
// in the order written; a key whose entry is not that row (deleted or
// written again since) is left.
func (b *batch) resorted(fw *fileWriter, id int32) {
	order := fw.pw.Order()
	if order == nil {
		return
	}
	moved := parquetx.Inverse(order)
	for p := range fw.keys.Len() {
		k := string(fw.keys.Key(p))
		if l, ok := b.idx.Get(k); ok && l.File == id && l.Pos == int64(p) {
			b.idx.Set(k, keyindex.Loc{File: id, Pos: int64(moved[p])})
		}
	}
	for _, dels := range [][]posDelete{b.deletes, b.peerDeletes()} {
		for i, d := range dels {
			if d.path == fw.path {
				dels[i].pos = int64(moved[d.pos])
			}
		}
	}
	fw.keys = keyindex.Keys{}
}

// peerDeletes are the deletes of the batch's peer (nil: none).
func (b *batch) peerDeletes() []posDelete {
	if b.peer == nil {
		return nil
	}
	return b.peer.deletes
}

// sortedKeys is keys, of a file's rows in the order written, in the order
// its sort put the rows (see parquetx.Writer.Order).
func sortedKeys(keys *keyindex.Keys, order []int32) keyindex.Keys {
	var out keyindex.Keys
	for _, p := range order {
		out.Push(append(out.Tail(), keys.Key(int(p))...))
	}
	return out
}
