package iceberg

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	icego "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
)

// rebuildIndex reads the key columns and row positions of every live row
// from the table's current snapshot: data files minus position deletes.
func (m *mirror) rebuildIndex(ctx context.Context) error {
	if err := m.attachDisk(); err != nil {
		return err
	}
	m.index.Clear()
	if m.tbl.CurrentSnapshot() == nil {
		return nil
	}
	tasks, err := m.tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan files of %s: %w", m.name(), err)
	}
	deleted := make(map[string]map[int64]bool)
	readDeletes := make(map[deleteID]bool)
	for _, task := range tasks {
		if len(task.EqualityDeleteFiles) > 0 {
			return fmt.Errorf("%s: %w", m.name(), ErrForeignDeletes)
		}
		for _, df := range slices.Concat(task.DeleteFiles, task.DeletionVectorFiles) {
			if readDeletes[deleteIDOf(df)] {
				continue
			}
			readDeletes[deleteIDOf(df)] = true
			if err := m.readDeletes(ctx, df, deleted); err != nil {
				return err
			}
		}
	}
	for _, task := range tasks {
		if err := m.readKeys(ctx, task.File, m.keyIDs, deleted[task.File.FilePath()]); err != nil {
			return err
		}
	}
	return nil
}

// deleteID tells one delete of a table from another: a position delete
// file by its path, a deletion vector by its path and offset, since one
// Puffin file holds the DVs of several data files. Taking a DV by its
// path alone read the first DV of a Puffin file and skipped the others,
// so a rebuilt index found rows those skipped DVs delete live ("key
// appears live twice"; the randomized crash driver, seed 4).
type deleteID struct {
	path   string
	offset int64
}

func deleteIDOf(df icego.DataFile) deleteID {
	id := deleteID{path: df.FilePath(), offset: -1}
	if off := df.ContentOffset(); off != nil {
		id.offset = *off
	}
	return id
}

// ErrForeignDeletes is a mirror holding equality deletes: another
// writer's, which the key index cannot be built from. The
// mirror is copied again (see mirror.recopyForeign).
var ErrForeignDeletes = errors.New("another writer committed equality deletes, which the bridge does not read")

// recopyForeign answers a key index rebuild that failed with err: for
// ErrForeignDeletes it marks the mirror for a copy again (PropRecopy, which
// a restart also finds) and leaves the index empty until the copy, which
// replaces every file of the table; any other error is returned.
func (m *mirror) recopyForeign(ctx context.Context, err error) error {
	if !errors.Is(err, ErrForeignDeletes) {
		return err
	}
	m.index.Clear()
	if m.log != nil {
		m.log.Warn("a mirror has deletes the bridge cannot read: copying the table again", "table", m.name(), "problem", err)
	}
	return m.setProperties(ctx, "mark a re-copy of", icego.Properties{PropRecopy: "another writer committed equality deletes"})
}

func (m *mirror) openParquet(path string) (*file.Reader, func(), error) {
	return openParquet(m.fs, path)
}

// openParquet opens a Parquet file of fs; done closes it.
func openParquet(fs icebergio.IO, path string) (r *file.Reader, done func(), err error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	r, err = file.NewParquetReader(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return r, func() { _ = r.Close() }, nil
}

func (m *mirror) readDeletes(ctx context.Context, df icego.DataFile, deleted map[string]map[int64]bool) error {
	return readPosDeletes(ctx, m.fs, df, deleted)
}

// readPosDeletes adds the rows position delete file or deletion vector df
// deletes to deleted (data file path → positions).
func readPosDeletes(ctx context.Context, fs icebergio.IO, df icego.DataFile, deleted map[string]map[int64]bool) error {
	if df.FileFormat() == icego.PuffinFile {
		return readDVInto(fs, df, deleted)
	}
	r, done, err := openParquet(fs, df.FilePath())
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

// readKeys adds the live rows of data file df to the key index (see
// keyindex.Index.ReadFile).
func (m *mirror) readKeys(ctx context.Context, df icego.DataFile, keyIDs []int, deleted map[int64]bool) error {
	r, done, err := m.openParquet(df.FilePath())
	if err != nil {
		return err
	}
	defer done()
	if err := m.index.ReadFile(ctx, r, df.FilePath(), keyIDs, m.rel.WholeRow, deleted); err != nil {
		return fmt.Errorf("%s: %w", m.name(), err)
	}
	return nil
}

// The key index is persisted beside the table's metadata (see
// keyindex.FileName), stamped with what it depends on (keyindex.Stamp).

func (m *mirror) indexPath() string { return m.tbl.Location() + keyindex.FileName }

// indexStamp is the stamp of the key index of the table's current state;
// nil when the table has no snapshot.
func (m *mirror) indexStamp() []byte {
	snap := m.tbl.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	meta := m.tbl.Metadata()
	return keyindex.Stamp(meta.TableUUID(), snap.SnapshotID, meta.CurrentSchema().ID, m.keyIDs, m.rel.WholeRow)
}

// KeyIndexConfig bounds the memory of a mirror's key index: past Memory
// bytes, its keys spill to sorted runs in a directory of Dir named by the
// table's UUID (see keyindex.Index.UseDisk), saved there at a clean stop.
// A mirror kept by the whole row stays in memory.
type KeyIndexConfig struct {
	Dir    string // "": the system temp dir's pg2iceberg-keyindex
	Memory int64  // bytes per mirror table; 0 or less: all in memory
}

// DefaultKeyIndexMemory is the memory budget of a mirror's key index by
// default: about 8M random bigint keys, or 3M uuid keys, stay in memory;
// a 100M-row table spills and the bridge stays under 1 GiB.
const DefaultKeyIndexMemory = 256 << 20

// indexDir is the directory of the mirror's disk tier.
func (m *mirror) indexDir() string {
	dir := m.indexDisk.Dir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "pg2iceberg-keyindex")
	}
	id := m.tbl.Metadata().TableUUID()
	return filepath.Join(dir, hex.EncodeToString(id[:]))
}

// attachDisk gives the mirror's index its disk tier, when configured and
// not there yet.
func (m *mirror) attachDisk() error {
	if m.indexDisk.Memory <= 0 || m.rel.WholeRow || m.index.HasDisk() {
		return nil
	}
	if err := m.index.UseDisk(m.indexDir(), m.indexDisk.Memory); err != nil {
		return fmt.Errorf("%s: %w", m.name(), err)
	}
	return nil
}

// saveIndex writes the index for the current snapshot: its disk tier's
// manifest when it has spilled, else the index file. Call it only when
// nothing is pending.
func (m *mirror) saveIndex() error {
	stamp := m.indexStamp()
	if stamp == nil || m.hasOpen() || len(m.deletes) > 0 {
		return nil
	}
	if m.index.Spilled() {
		if err := m.index.SaveDisk(stamp); err != nil {
			return fmt.Errorf("%s: %w", m.name(), err)
		}
		if m.log != nil {
			d := m.index.DiskUse()
			m.log.Info("key index saved on disk", "table", m.name(), "rows", m.index.Len(), "runs", d.Runs, "bytes", d.Bytes, "spills", d.Spills, "merges", d.Merges)
		}
		return nil
	}
	f, err := m.fs.Create(m.indexPath())
	if err != nil {
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	if err := m.index.Write(halfWriter{f}, stamp); err != nil {
		_ = f.Close()
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save key index of %s: %w", m.name(), err)
	}
	return nil
}

// loadIndex reads a persisted index for the table's current state.
func (m *mirror) loadIndex() error {
	stamp := m.indexStamp()
	if stamp == nil {
		return keyindex.ErrStale
	}
	if m.indexDisk.Memory > 0 && !m.rel.WholeRow {
		index, err := keyindex.LoadDisk(m.indexDir(), m.indexDisk.Memory, stamp)
		if err == nil {
			m.index = index
			return nil
		}
	}
	f, err := m.fs.Open(m.indexPath())
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	index, err := keyindex.Read(data, stamp, m.rel.WholeRow)
	if err != nil {
		return err
	}
	old := m.index
	m.index = index
	if err := m.attachDisk(); err != nil {
		m.index = old
		return err
	}
	return nil
}

// halfWriter writes each buffer in two halves with the crash point
// index-save between them, so that the crash tests can kill the bridge in
// the middle of writing an index file (its checksum then rejects it and
// the index is rebuilt from the table).
type halfWriter struct{ w io.Writer }

func (h halfWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p[:len(p)/2])
	if err != nil {
		return n, err
	}
	crashPoint("index-save")
	m, err := h.w.Write(p[len(p)/2:])
	return n + m, err
}
