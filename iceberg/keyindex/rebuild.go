package keyindex

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// ReadFile adds the live rows of a data file to the index, at a new file
// id for path: the key of every row but those at the positions deleted,
// read from the key fields keyIDs (of a whole-row key, those the file
// has: a column added later is NULL in it). A key live twice is an error
// naming both rows, unless the key is the whole row.
func (x *Index) ReadFile(ctx context.Context, r *file.Reader, path string, keyIDs []int, wholeRow bool, deleted map[int64]bool) error {
	if wholeRow {
		keyIDs = parquetx.PresentFields(r, keyIDs)
	}
	cols, err := parquetx.ColumnsByFieldID(r, keyIDs)
	if err != nil {
		return fmt.Errorf("data file %s: %w", path, err)
	}
	id := x.AddFile(path)
	// Keys of one 8-byte value go in by batches, so a file's serial keys
	// become runs (see intTable) as in a copy.
	ints := intBatch{t: x.ints}
	var pos int64
	var b []byte
	err = parquetx.EachBatch(ctx, r, cols, nil, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i, pos = i+1, pos+1 {
			if deleted[pos] {
				continue
			}
			var err error
			if b, err = appendRecordKey(b[:0], rec, keyIDs, wholeRow, i); err != nil {
				return fmt.Errorf("data file %s row %d: %w", path, pos, err)
			}
			l := Loc{File: id, Pos: pos}
			if x.Spilled() { // an index with a disk tier holds no repeats
				if prev, dup := x.Get(string(b)); dup {
					return fmt.Errorf("key appears live twice (%s row %d and %s row %d): the table was changed by another writer", x.files[prev.File], prev.Pos, path, pos)
				}
				x.Add(b, l)
				continue
			}
			if v, ok := intKey(b); ok {
				if e, ok := ints.add(v, packLoc(l)); !ok {
					return x.twice(e, path)
				}
				continue
			}
			k := string(b)
			if prev, dup := x.Get(k); dup && !wholeRow {
				return fmt.Errorf("key appears live twice (%s row %d and %s row %d): the table was changed by another writer", x.files[prev.File], prev.Pos, path, pos)
			}
			x.Set(k, l)
		}
		if x.spillDue() && !x.Spilled() { // the rest of the file goes to the tier
			if e, ok := ints.flush(); !ok {
				return x.twice(e, path)
			}
			if err := x.spill(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if e, ok := ints.flush(); !ok {
		return x.twice(e, path)
	}
	return nil
}

// twice names both rows of an integer key met again: e's, in the file
// at path, and the other the index holds (in a run or a slot: a failed
// batch may have overwritten the slot, never a run).
func (x *Index) twice(e intSlot, path string) error {
	at := fmt.Sprintf("%s row %d", path, unpackLoc(e.val).Pos)
	other, ok := uint64(0), false
	if r := x.ints.run(e.key); r != nil {
		other, ok = r.val+(e.key-r.key), true
	} else if v, found := x.ints.get(e.key); found {
		other, ok = v, true
	}
	if p := unpackLoc(other); ok && other != e.val && int(p.File) < len(x.files) {
		at = fmt.Sprintf("%s row %d and %s", x.files[p.File], p.Pos, at)
	}
	return fmt.Errorf("key appears live twice (%s): the table was changed by another writer", at)
}
