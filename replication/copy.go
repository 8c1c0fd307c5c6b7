package replication

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// RowWriter takes the rows one copy worker reads. A row and its values are
// valid only during the call: Row copies what it keeps.
type RowWriter interface {
	Row(row decode.Tuple) error
}

// CopySink receives the rows of a copy. NewCopyWriter is called from the
// copying goroutine; each writer is then used by one worker goroutine.
type CopySink interface {
	// BeginCopy starts a table's copy taken in a snapshot at lsn, in which
	// the table's columns are attnums (by attnum). It returns
	// the heap page ranges ([from, to), to 0 meaning to the end) an earlier,
	// interrupted copy already committed, which are not copied again, and
	// the rows they hold. resumeFrom is where the stream will resume (0: no
	// resume possible). sizeHint is the rows the copy is expected to bring,
	// to size structures for them, never more than the table holds (0:
	// unknown).
	BeginCopy(ctx context.Context, rel *decode.Relation, attnums map[int]string, lsn, resumeFrom decode.LSN, sizeHint int64) (done [][2]int64, rows int64, err error)
	NewCopyWriter(relID uint32) (RowWriter, error)
	// ChunkDone is called by a worker when w has written every row of the
	// chunk [from, to).
	ChunkDone(ctx context.Context, relID uint32, w RowWriter, from, to int64) error
	FinishCopy(ctx context.Context, relID uint32, lsn decode.LSN) error
	// AbortCopy is called when a copy that BeginCopy started fails or is
	// stopped, after every worker has returned: the sink drops what its
	// writers wrote and did not commit.
	AbortCopy(relID uint32)
}

// CopyConfig configures a copy.
type CopyConfig struct {
	// SourceURL opens the workers' connections.
	SourceURL string
	// Workers is how many connections copy in parallel (default 1).
	Workers int
	// Keepalive, when set, is called every few seconds during the copy.
	Keepalive func() error
	// Terminal, when set, gets a progress bar per table on its last line,
	// under the log lines, which must be written through it too;
	// otherwise progress is logged every few seconds.
	Terminal *Terminal
	// OnProgress, when set, is told each table's copied rows and the
	// estimated total (for status and metrics); safe to call concurrently.
	OnProgress func(table string, rows, estimate int64)
	// ResumeFrom is where the main stream resumes when this copy is done:
	// chunks an interrupted copy committed in a snapshot at or after it are
	// kept. 0: every copy starts over.
	ResumeFrom decode.LSN
}

// Chunk sizes: at least 2,048 pages (16 MiB of heap), at most 65,536
// (512 MiB), which a restart may have to copy again per worker.
const (
	chunkPages    = 2048
	maxChunkPages = 65536
)

// CopyTables copies every table inside the exported snapshot and marks each
// complete at the slot's consistent point. Each table is split into ctid
// block ranges that Workers connections it opens (see connectCopy), all in
// the same snapshot, copy in parallel into Parquet files of their own; the
// table is committed in one snapshot when all its chunks are written.
func CopyTables(ctx context.Context, slot NewSlot, rels []*decode.Relation, sink CopySink, cfg CopyConfig, log *slog.Logger) error {
	workers := max(cfg.Workers, 1)
	txs := make([]pgx.Tx, 0, workers)
	var conns []*pgx.Conn
	defer func() {
		for _, tx := range txs {
			_ = tx.Rollback(context.Background())
		}
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	}()
	for len(conns) < workers {
		c, err := connectCopy(ctx, cfg.SourceURL)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return fmt.Errorf("begin copy transaction: %w", err)
		}
		txs = append(txs, tx)
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET TRANSACTION SNAPSHOT '%s'", slot.SnapshotName)); err != nil {
			return fmt.Errorf("import snapshot %s: %w", slot.SnapshotName, err)
		}
	}
	var keepMu sync.Mutex // serialises Keepalive calls from workers
	keepalive := func() error {
		if cfg.Keepalive == nil {
			return nil
		}
		keepMu.Lock()
		defer keepMu.Unlock()
		return cfg.Keepalive()
	}
	for _, rel := range rels {
		if err := copyTable(ctx, txs, rel, sink, slot.ConsistentPoint, cfg, keepalive, log); err != nil {
			return err
		}
		if err := sink.FinishCopy(ctx, rel.ID, slot.ConsistentPoint); err != nil {
			return err
		}
	}
	for i, tx := range txs {
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("end copy transaction: %w", err)
		}
		txs[i] = nil
	}
	txs = txs[:0]
	return nil
}

// chunk is a range of heap pages [from, to); to == 0 means to the end.
type chunk struct{ from, to int64 }

// planChunks splits the heap pages not in done into chunks for workers;
// the table may have grown since pages was read, so the chunk that reaches
// the end is open.
func planChunks(pages int64, workers int, done [][2]int64) []chunk {
	parts := int64(workers * 4)
	size := min(max((pages+parts-1)/parts, chunkPages), maxChunkPages) // rounded up: no sliver of a last chunk
	var out []chunk
	for _, gap := range remaining(done) {
		end := gap.to
		if end == 0 {
			end = max(pages, gap.from+1)
		}
		for from := gap.from; from < end; from += size {
			out = append(out, chunk{from, min(from+size, end)})
		}
		if gap.to == 0 {
			out[len(out)-1].to = 0
		}
	}
	return out
}

// remaining is the complement of done in [0, end of table).
func remaining(done [][2]int64) []chunk {
	sorted := slices.Clone(done)
	slices.SortFunc(sorted, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var out []chunk
	at := int64(0)
	for _, d := range sorted {
		if d[0] > at {
			out = append(out, chunk{at, d[0]})
		}
		if d[1] == 0 {
			return out // done to the end
		}
		at = max(at, d[1])
	}
	return append(out, chunk{at, 0})
}

// copyTable copies one table in the snapshot at lsn (see CopyTables),
// except the chunks an interrupted copy committed (see CopySink.BeginCopy).
func copyTable(ctx context.Context, txs []pgx.Tx, rel *decode.Relation, sink CopySink, lsn decode.LSN, cfg CopyConfig, keepalive func() error, log *slog.Logger) error {
	if skipKeyless(rel, log) {
		return nil
	}
	if err := copyRows(ctx, txs, rel, sink, lsn, cfg, keepalive, log); err != nil {
		sink.AbortCopy(rel.ID)
		return err
	}
	return nil
}

// copyRows is copyTable without the clean-up of a failed copy.
func copyRows(ctx context.Context, txs []pgx.Tx, rel *decode.Relation, sink CopySink, lsn decode.LSN, cfg CopyConfig, keepalive func() error, log *slog.Logger) error {
	var estimate float64
	var pages, statPages int64
	if err := txs[0].QueryRow(ctx, "SELECT GREATEST(reltuples, 0), pg_relation_size($1::oid) / current_setting('block_size')::int, relpages FROM pg_class WHERE oid = $1", rel.ID).Scan(&estimate, &pages, &statPages); err != nil {
		return fmt.Errorf("size of %s: %w", rel.QualifiedName(), err)
	}
	attnums, err := AttNums(ctx, txs[0], rel.ID)
	if err != nil {
		return err
	}
	done, doneRows, err := sink.BeginCopy(ctx, rel, attnums, lsn, cfg.ResumeFrom, sizeHint(estimate, statPages, pages, rel.RowFilter != ""))
	if err != nil {
		return err
	}
	base := copyQuery(rel)
	chunks := planChunks(pages, len(txs), done)
	p := &copyProgress{rel: rel, log: log, estimate: int64(estimate), start: time.Now(), last: time.Now(), cfg: cfg, before: doneRows}
	p.rows.Store(doneRows)
	format, textFor := copyFormat(rel)
	attrs := []any{"table", rel.QualifiedName(), "estimated_rows", p.estimate, "chunks", len(chunks), "chunks_kept", len(done), "rows_kept", doneRows, "workers", min(len(txs), len(chunks)), "format", format}
	if textFor != nil {
		attrs = append(attrs, "text_because", fmt.Sprintf("column %s has type %s", textFor.Name, typeName(textFor)))
	}
	log.Info("copy started", attrs...)
	copySQL := " TO STDOUT"
	if format == "binary" {
		copySQL = " TO STDOUT (FORMAT binary)"
	}

	// Writers first: once a worker runs, returning early would leave it
	// writing while the caller aborts the copy.
	writers := make([]RowWriter, min(len(txs), len(chunks)))
	for i := range writers {
		if writers[i], err = sink.NewCopyWriter(rel.ID); err != nil {
			return err
		}
	}
	work := make(chan chunk) // closed by the feeder below
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(work)
		for _, c := range chunks {
			select {
			case work <- c:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for i, w := range writers {
		tx := txs[i]
		g.Go(func() error {
			cw := &copyWriter{rel: rel, w: w, progress: p, keepalive: keepalive}
			if format == "binary" {
				cw.binary = new(decode.CopyBinaryParser)
			} else {
				cw.text = new(decode.CopyTextParser)
			}
			cw.row = cw.writeRow
			for c := range work {
				if _, err := tx.Conn().PgConn().CopyTo(gctx, cw, "COPY ("+c.query(base)+")"+copySQL); err != nil {
					return fmt.Errorf("copy %s: %w", rel.QualifiedName(), err)
				}
				if err := cw.end(); err != nil {
					return err
				}
				rows := cw.pending
				cw.pending = 0
				if err := p.add(rows, keepalive); err != nil {
					return err
				}
				if err := sink.ChunkDone(gctx, rel.ID, w, c.from, c.to); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	p.done()
	copied := p.rows.Load() - doneRows
	log.Info("copy finished", "table", rel.QualifiedName(), "rows", p.rows.Load(), "rows_copied", copied, "elapsed", time.Since(p.start).Round(time.Millisecond),
		"rows_per_s", int64(float64(copied)/max(time.Since(p.start).Seconds(), 0.001)))
	return nil
}

// copyQuery is the SELECT a copy reads the table's published columns and
// rows with, to be narrowed to a chunk (see chunk.query).
func copyQuery(rel *decode.Relation) string {
	cols := make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = decode.QuoteIdent(c.Name)
	}
	base := fmt.Sprintf("SELECT %s FROM %s.%s WHERE true", strings.Join(cols, ", "), decode.QuoteIdent(rel.Schema), decode.QuoteIdent(rel.Name))
	if rel.RowFilter != "" {
		base += " AND (" + rel.RowFilter + ")"
	}
	return base
}

// query is base (see copyQuery) narrowed to the chunk's heap pages.
func (c chunk) query(base string) string {
	q := base
	if c.from > 0 {
		q += fmt.Sprintf(" AND ctid >= '(%d,0)'", c.from)
	}
	if c.to > 0 {
		q += fmt.Sprintf(" AND ctid < '(%d,0)'", c.to)
	}
	return q
}

// sizeHint estimates the rows a copy brings from the statistics (reltuples
// rows in statPages pages) and the table's pages now, scaled down when the
// table shrank since, never up: a hint sizes memory up front, so it must
// not exceed what the table holds. A row filter may keep any share of the
// rows, so a filtered table gets no hint.
func sizeHint(reltuples float64, statPages, pages int64, filtered bool) int64 {
	if filtered || statPages <= 0 || reltuples <= 0 {
		return 0
	}
	if pages < statPages {
		reltuples = reltuples * float64(pages) / float64(statPages)
	}
	return int64(reltuples)
}

// copyProgress counts a table's copied rows across workers and logs
// progress (rows, %, rate, ETA) every few seconds.
type copyProgress struct {
	rel      *decode.Relation
	log      *slog.Logger
	estimate int64
	start    time.Time
	rows     atomic.Int64 // including before
	before   int64        // rows committed by an earlier run (resumed copy)
	cfg      CopyConfig
	mu       sync.Mutex // guards last and writes to cfg.Terminal
	last     time.Time
}

func (p *copyProgress) add(n int64, keepalive func() error) error {
	rows := p.rows.Add(n)
	if p.cfg.OnProgress != nil {
		p.cfg.OnProgress(p.rel.QualifiedName(), rows, p.estimate)
	}
	every := 5 * time.Second
	if p.cfg.Terminal != nil {
		every = 250 * time.Millisecond
	}
	p.mu.Lock()
	due := time.Since(p.last) > every
	if due {
		p.last = time.Now()
		if p.cfg.Terminal != nil {
			p.bar(rows)
		}
	}
	p.mu.Unlock()
	if !due {
		return nil
	}
	if p.cfg.Terminal != nil {
		return keepalive()
	}
	elapsed := time.Since(p.start).Seconds()
	rate := float64(rows-p.before) / elapsed
	attrs := []any{"table", p.rel.QualifiedName(), "rows", rows, "rows_per_s", int64(rate)}
	if p.estimate > 0 {
		attrs = append(attrs, "percent", fmt.Sprintf("%.1f", min(100*float64(rows)/float64(p.estimate), 100)))
		if rate > 0 && rows < p.estimate {
			attrs = append(attrs, "eta", (time.Duration(float64(p.estimate-rows)/rate) * time.Second).Round(time.Second))
		}
	}
	p.log.Info("copy progress", attrs...)
	return keepalive()
}

// bar redraws the table's progress bar. Call with p.mu held.
func (p *copyProgress) bar(rows int64) {
	rate := float64(rows-p.before) / max(time.Since(p.start).Seconds(), 0.001)
	p.cfg.Terminal.setBar(barText(p.rel.QualifiedName(), rows, p.estimate, rate))
}

// done ends the table's progress: the estimate becomes the count, and the
// bar becomes a line of rows, time and rate.
func (p *copyProgress) done() {
	if p.cfg.OnProgress != nil {
		p.cfg.OnProgress(p.rel.QualifiedName(), p.rows.Load(), p.rows.Load())
	}
	if p.cfg.Terminal == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.Terminal.endBar(finalText(p.rel.QualifiedName(), p.rows.Load(), p.before, time.Since(p.start)))
}

// copyFormat returns the COPY format of a table's copy: binary when
// mapping reads every column's binary form, else text, with the first
// column that keeps the copy on text.
func copyFormat(rel *decode.Relation) (format string, textFor *decode.Column) {
	for i := range rel.Columns {
		c := &rel.Columns[i]
		if !mapping.BinaryReadable(rel.QualifiedName(), *c) {
			return "text", c
		}
	}
	return "binary", nil
}

// typeName names a column's type for the log.
func typeName(c *decode.Column) string {
	switch {
	case c.Rule != nil:
		return c.TypeName + " with a mapping rule"
	case c.TypeName != "":
		return c.TypeName
	case c.Type != nil:
		return c.Type.Display()
	case mapping.Builtin(c.TypeOID, c.TypeMod) != nil:
		return mapping.Builtin(c.TypeOID, c.TypeMod).Display()
	}
	return fmt.Sprintf("oid %d", c.TypeOID)
}

// copyWriter parses the output of one worker's COPY commands, in text or
// binary form, as it arrives, and feeds a RowWriter.
type copyWriter struct {
	rel       *decode.Relation
	w         RowWriter
	text      *decode.CopyTextParser   // text format: one line a row
	partial   []byte                   // text format: a line split across writes
	binary    *decode.CopyBinaryParser // binary format
	row       func(decode.Tuple) error // writeRow, bound once
	progress  *copyProgress
	keepalive func() error
	pending   int64 // rows not yet counted in progress
}

func (w *copyWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.binary != nil {
		// CopyTo's caller names the table.
		if err := w.binary.Feed(p, len(w.rel.Columns), w.row); err != nil {
			return 0, err
		}
		return n, nil
	}
	if len(w.partial) > 0 {
		p = append(w.partial, p...)
		w.partial = w.partial[:0]
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial[:0], p...)
			return n, nil
		}
		// The row is valid until the next line: w.w copies what it keeps.
		row, err := w.text.Parse(p[:i], len(w.rel.Columns))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", w.rel.QualifiedName(), err)
		}
		if err := w.writeRow(row); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
}

// writeRow hands one row to the RowWriter and counts it.
func (w *copyWriter) writeRow(row decode.Tuple) error {
	if err := w.w.Row(row); err != nil {
		return err
	}
	if w.pending++; w.pending == 4096 {
		w.pending = 0
		return w.progress.add(4096, w.keepalive)
	}
	return nil
}

// end checks that one COPY's output ended after a whole row.
func (w *copyWriter) end() error {
	if w.binary != nil {
		if err := w.binary.End(); err != nil {
			return fmt.Errorf("copy %s: %w", w.rel.QualifiedName(), err)
		}
		return nil
	}
	if len(w.partial) > 0 {
		w.partial = w.partial[:0]
		return fmt.Errorf("copy %s: output ended inside a row", w.rel.QualifiedName())
	}
	return nil
}
