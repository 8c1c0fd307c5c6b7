package replication

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// CopySink receives the rows of an initial copy.
type CopySink interface {
	// BeginCopy starts a table's copy: rows already in its mirror (from an
	// earlier slot) are deleted by the copy's commit.
	BeginCopy(relID uint32)
	CopyRow(relID uint32, row decode.Tuple) error
	FinishCopy(ctx context.Context, relID uint32, lsn decode.LSN) error
}

// CopyTables copies every table inside the exported snapshot, one table
// after another, and marks each complete at the slot's consistent point.
func CopyTables(ctx context.Context, conn *pgx.Conn, slot NewSlot, rels []*decode.Relation, sink CopySink, log *slog.Logger) error {
	return copyTables(ctx, conn, slot, rels, sink, nil, log)
}

func copyTables(ctx context.Context, conn *pgx.Conn, slot NewSlot, rels []*decode.Relation, sink CopySink, keepalive func() error, log *slog.Logger) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin copy transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET TRANSACTION SNAPSHOT '%s'", slot.SnapshotName)); err != nil {
		return fmt.Errorf("import snapshot %s: %w", slot.SnapshotName, err)
	}
	for _, rel := range rels {
		sink.BeginCopy(rel.ID)
		if err := copyTable(ctx, tx, rel, sink, keepalive, log); err != nil {
			return err
		}
		if err := sink.FinishCopy(ctx, rel.ID, slot.ConsistentPoint); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

func copyTable(ctx context.Context, tx pgx.Tx, rel *decode.Relation, sink CopySink, keepalive func() error, log *slog.Logger) error {
	var estimate float64
	_ = tx.QueryRow(ctx, "SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = $1", rel.ID).Scan(&estimate)
	cols := make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = decode.QuoteIdent(c.Name)
	}
	sql := fmt.Sprintf("COPY (SELECT %s FROM %s.%s", strings.Join(cols, ", "), decode.QuoteIdent(rel.Schema), decode.QuoteIdent(rel.Name))
	if rel.RowFilter != "" {
		sql += " WHERE " + rel.RowFilter
	}
	sql += ") TO STDOUT"
	w := &copyWriter{rel: rel, sink: sink, log: log, estimate: int64(estimate), start: time.Now(), lastLog: time.Now(), keepalive: keepalive, lastKeepalive: time.Now()}
	log.Info("copy started", "table", rel.QualifiedName(), "estimated_rows", w.estimate)
	if _, err := tx.Conn().PgConn().CopyTo(ctx, w, sql); err != nil {
		return fmt.Errorf("copy %s: %w", rel.QualifiedName(), err)
	}
	if len(w.partial) > 0 {
		return fmt.Errorf("copy %s: output ended inside a row", rel.QualifiedName())
	}
	log.Info("copy finished", "table", rel.QualifiedName(), "rows", w.rows, "elapsed", time.Since(w.start).Round(time.Millisecond))
	return nil
}

// copyWriter parses COPY text output as it arrives and feeds the sink.
type copyWriter struct {
	rel      *decode.Relation
	sink     CopySink
	log      *slog.Logger
	partial  []byte
	rows     int64
	estimate int64
	start    time.Time
	lastLog  time.Time

	keepalive     func() error
	lastKeepalive time.Time
}

func (w *copyWriter) Write(p []byte) (int, error) {
	n := len(p)
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
		row, err := decode.ParseCopyText(p[:i], len(w.rel.Columns))
		if err != nil {
			return 0, fmt.Errorf("row %d: %w", w.rows+1, err)
		}
		if err := w.sink.CopyRow(w.rel.ID, row); err != nil {
			return 0, err
		}
		w.rows++
		p = p[i+1:]
		if w.rows%10000 == 0 {
			if time.Since(w.lastLog) > 5*time.Second {
				w.progress()
			}
			if w.keepalive != nil && time.Since(w.lastKeepalive) > 5*time.Second {
				w.lastKeepalive = time.Now()
				if err := w.keepalive(); err != nil {
					return 0, err
				}
			}
		}
	}
}

func (w *copyWriter) progress() {
	w.lastLog = time.Now()
	elapsed := time.Since(w.start).Seconds()
	rate := float64(w.rows) / elapsed
	attrs := []any{"table", w.rel.QualifiedName(), "rows", w.rows, "rows_per_s", int64(rate)}
	if w.estimate > 0 {
		pct := 100 * float64(w.rows) / float64(w.estimate)
		attrs = append(attrs, "percent", fmt.Sprintf("%.1f", min(pct, 100)))
		if rate > 0 && w.rows < w.estimate {
			attrs = append(attrs, "eta", (time.Duration(float64(w.estimate-w.rows)/rate) * time.Second).Round(time.Second))
		}
	}
	w.log.Info("copy progress", attrs...)
}
