package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// rebuildIndex reads the key columns and row positions of every live row
// from the table's current snapshot: data files minus position deletes.
func (m *mirror) rebuildIndex(ctx context.Context) error {
	m.index.clear()
	m.files = m.files[:0]
	if m.tbl.CurrentSnapshot() == nil {
		return nil
	}
	tasks, err := m.tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan files of %s: %w", m.name(), err)
	}
	deleted := make(map[string]map[int64]bool)
	readDeletes := make(map[string]bool)
	for _, task := range tasks {
		if len(task.EqualityDeleteFiles) > 0 || len(task.DeletionVectorFiles) > 0 {
			return fmt.Errorf("%s has equality deletes or deletion vectors, which the bridge does not write: another writer changed the table", m.name())
		}
		for _, df := range task.DeleteFiles {
			if readDeletes[df.FilePath()] {
				continue
			}
			readDeletes[df.FilePath()] = true
			if err := m.readDeletes(ctx, df, deleted); err != nil {
				return err
			}
		}
	}
	for _, task := range tasks {
		id := int32(len(m.files))
		m.files = append(m.files, task.File.FilePath())
		if err := m.readKeys(ctx, task.File, id, m.keyIDs, deleted[task.File.FilePath()]); err != nil {
			return err
		}
	}
	return nil
}

func (m *mirror) openParquet(path string) (*file.Reader, func(), error) {
	f, err := m.fs.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	r, err := file.NewParquetReader(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return r, func() { _ = r.Close() }, nil
}

func (m *mirror) readDeletes(ctx context.Context, df icego.DataFile, deleted map[string]map[int64]bool) error {
	r, done, err := m.openParquet(df.FilePath())
	if err != nil {
		return err
	}
	defer done()
	cols, err := parquetx.ColumnsByFieldID(r, []int{2147483546, 2147483545})
	if err != nil {
		return fmt.Errorf("delete file %s: %w", df.FilePath(), err)
	}
	return parquetx.EachBatch(ctx, r, cols, nil, func(rec arrow.RecordBatch) error {
		paths := rec.Column(0).(*array.String)
		pos := rec.Column(1).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			p := paths.Value(i)
			set := deleted[p]
			if set == nil {
				set = make(map[int64]bool)
				deleted[p] = set
			}
			set[pos.Value(i)] = true
		}
		return nil
	})
}

func (m *mirror) readKeys(ctx context.Context, df icego.DataFile, id int32, keyIDs []int, deleted map[int64]bool) error {
	r, done, err := m.openParquet(df.FilePath())
	if err != nil {
		return err
	}
	defer done()
	if m.rel.WholeRow {
		keyIDs = parquetx.PresentFields(r, keyIDs)
	}
	cols, err := parquetx.ColumnsByFieldID(r, keyIDs)
	if err != nil {
		return fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	// Keys of one 8-byte value go in by batches, so a file's serial keys
	// become runs (see intTable) as in a copy.
	ints := intBatch{t: m.index.ints}
	// twice names both rows of a key met again: this one, and the other the
	// index holds (in a run or a slot: a failed batch may have overwritten
	// the slot, never a run).
	twice := func(e intSlot) error {
		at := fmt.Sprintf("%s row %d", df.FilePath(), unpackLoc(e.val).pos)
		other, ok := uint64(0), false
		if r := m.index.ints.run(e.key); r != nil {
			other, ok = r.val+(e.key-r.key), true
		} else if v, found := m.index.ints.get(e.key); found {
			other, ok = v, true
		}
		if p := unpackLoc(other); ok && other != e.val && int(p.file) < len(m.files) {
			at = fmt.Sprintf("%s row %d and %s", m.files[p.file], p.pos, at)
		}
		return fmt.Errorf("%s: key appears live twice (%s): the table was changed by another writer", m.name(), at)
	}
	var pos int64
	var b []byte
	err = parquetx.EachBatch(ctx, r, cols, nil, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i, pos = i+1, pos+1 {
			if deleted[pos] {
				continue
			}
			var err error
			if b, err = m.appendRecordKey(b[:0], rec, keyIDs, i); err != nil {
				return fmt.Errorf("data file %s row %d: %w", df.FilePath(), pos, err)
			}
			l := loc{file: id, pos: pos}
			if v, ok := intKey(b); ok {
				if e, ok := ints.add(v, packLoc(l)); !ok {
					return twice(e)
				}
				continue
			}
			k := string(b)
			if prev, dup := m.index.get(k); dup && !m.rel.WholeRow {
				return fmt.Errorf("%s: key appears live twice (%s row %d and %s row %d): the table was changed by another writer", m.name(), m.files[prev.file], prev.pos, df.FilePath(), pos)
			}
			m.index.set(k, l)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if e, ok := ints.flush(); !ok {
		return twice(e)
	}
	return nil
}
