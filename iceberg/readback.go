package iceberg

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// Unchanged TOAST values: an UPDATE that does not touch a large value does
// not carry it. With REPLICA IDENTITY FULL the old tuple has it; otherwise it
// is read back from the mirror's data file holding the old row. A row still
// in this flush's open file is first made readable by closing that file (a
// flush may commit several data files).

func hasUnchanged(t decode.Tuple) bool {
	for _, d := range t {
		if d.Kind == decode.Unchanged {
			return true
		}
	}
	return false
}

// resolveAfter returns c's new row with every unchanged value filled in:
// from the old tuple (REPLICA IDENTITY FULL), else read back from the
// mirror, when toMirror says the mirror is at the state before c. A value
// the bridge cannot have is NULL in the row, and its relation column is
// listed in the second result, never a silent NULL: the mirror is ahead of
// c (a copy taken after c, so c goes to the changelog only), or, in a
// resumed copy's window, the mirror lacks the old row (see
// mirror.unknown).
func (s *Sink) resolveAfter(st *sourceTable, c *decode.Change, toMirror bool) (decode.Tuple, []int, error) {
	after := append(decode.Tuple(nil), c.After...)
	var missing []int
	for i, d := range after {
		if d.Kind != decode.Unchanged {
			continue
		}
		if c.Before != nil && !c.BeforeIsKey && c.Before[i].Kind != decode.Unchanged {
			after[i] = c.Before[i]
			continue
		}
		if i < len(st.rel.Columns) && st.rel.Columns[i].Excluded() {
			continue // written nowhere (see appendTuple): nothing to resolve
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return after, nil, nil
	}
	m := st.mirror
	if m == nil || !toMirror {
		return unknownValues(after, missing)
	}
	oldImage := c.Before
	if oldImage == nil {
		oldImage = c.After
	}
	k, err := m.key(oldImage)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := m.unknown[k]; ok {
		return unknownValues(after, missing)
	}
	texts, err := m.readBack(k, missing)
	if errors.Is(err, errNotInMirror) && s.inCopyWindow(st) {
		return unknownValues(after, missing)
	}
	if err != nil {
		err = fmt.Errorf("%s: read back the unchanged value of column %s: %w", m.name(), st.rel.Columns[missing[0]].Name, err)
		return nil, nil, s.readFailed(context.Background(), m, err)
	}
	for j, i := range missing {
		if texts[j] == nil {
			after[i] = decode.Datum{Kind: decode.Null}
		} else {
			after[i] = decode.Datum{Kind: decode.Text, Data: texts[j]}
		}
	}
	return after, nil, nil
}

// unknownValues sets the missing columns of after to NULL and returns
// them as resolveAfter does.
func unknownValues(after decode.Tuple, missing []int) (decode.Tuple, []int, error) {
	for _, i := range missing {
		after[i] = decode.Datum{Kind: decode.Null}
	}
	return after, missing, nil
}

// errNotInMirror: the key index has no row of the key.
var errNotInMirror = errors.New("the row is not in the mirror")

// readBack returns the text forms of the given relation columns of the live
// row with key k (nil for NULL).
func (m *mirror) readBack(k string, cols []int) ([][]byte, error) {
	l, ok := m.index.Get(k)
	if !ok {
		return nil, errNotInMirror
	}
	if m.isOpen(l.File) {
		if err := m.rotate(); err != nil {
			return nil, err
		}
	}
	path := m.index.Path(l.File)
	sc := m.tbl.Schema()
	ids := make([]int, len(cols))
	for j, i := range cols {
		f, ok := sc.FindFieldByName(m.rel.Columns[i].Name)
		if !ok {
			return nil, fmt.Errorf("column %s missing from the schema", m.rel.Columns[i].Name)
		}
		ids[j] = f.ID
	}
	r, done, err := m.openParquet(path)
	if err != nil {
		return nil, err
	}
	defer done()
	// Find the row group holding the row.
	rg, start := -1, int64(0)
	for g := 0; g < r.NumRowGroups(); g++ {
		n := r.MetaData().RowGroup(g).NumRows()
		if l.Pos < start+n {
			rg = g
			break
		}
		start += n
	}
	if rg < 0 {
		return nil, fmt.Errorf("position %d is beyond %s", l.Pos, path)
	}
	leaves, err := parquetx.ColumnsByFieldID(r, ids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(cols))
	found := false
	err = parquetx.EachBatch(context.Background(), r, leaves, []int{rg}, func(rec arrow.RecordBatch) error {
		if found || l.Pos >= start+rec.NumRows() {
			start += rec.NumRows()
			return nil
		}
		i := int(l.Pos - start)
		for j := range cols {
			// Columns come back in file order; map by field ID.
			c := columnIndexOf(rec, ids[j])
			if c < 0 {
				return fmt.Errorf("field %d not read", ids[j])
			}
			t, err := textFromArray(rec.Column(c), i)
			if err != nil {
				return err
			}
			out[j] = t
		}
		found = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("position %d not found in %s", l.Pos, path)
	}
	return out, nil
}

// columnIndexOf finds the record column carrying an Iceberg field ID.
func columnIndexOf(rec arrow.RecordBatch, id int) int {
	for c, f := range rec.Schema().Fields() {
		if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok && v == fmt.Sprint(id) {
			return c
		}
	}
	return -1
}

// textFromArray renders a value in PostgreSQL's text output form, for the
// types a TOASTed (variable-length) column can have.
func textFromArray(arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.String:
		return []byte(a.Value(i)), nil
	case *array.LargeString:
		return []byte(a.Value(i)), nil
	case *array.Binary:
		return []byte(`\x` + hex.EncodeToString(a.Value(i))), nil
	case *array.LargeBinary:
		return []byte(`\x` + hex.EncodeToString(a.Value(i))), nil
	case *array.Decimal128:
		return []byte(a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)), nil
	}
	return nil, fmt.Errorf("reading back a value of type %s is not supported; set REPLICA IDENTITY FULL on the table", arr.DataType())
}
