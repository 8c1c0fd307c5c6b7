package bridge

import (
	"context"
	"maps"
	"sync"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// copyTable copies one table in a snapshot of its own, or with SkipCopy
// only marks it copied so that changes from now on apply. keepalive, while
// streaming, keeps the replication connection alive (see
// replication.Stream.Keepalive); resumeFrom is where the stream will
// resume (see replication.CopyConfig.ResumeFrom).
func (b *bridge) copyTable(ctx context.Context, rel *decode.Relation, keepalive func() error, resumeFrom decode.LSN) error {
	if b.cfg.SkipCopy {
		b.log.Info("backfill skipped", "table", rel.QualifiedName())
		return b.sink.FinishCopy(ctx, rel.ID, 0)
	}
	cfg := b.copyConfig(keepalive)
	cfg.ResumeFrom = resumeFrom
	return replication.SyncTable(ctx, rel, copySink{b.sink}, cfg, b.log)
}

func (b *bridge) copyConfig(keepalive func() error) replication.CopyConfig {
	return replication.CopyConfig{SourceURL: b.cfg.Source, Workers: b.cfg.CopyWorkers, Keepalive: keepalive, OnProgress: b.copies.set, Terminal: b.cfg.Terminal}
}

// copySink adapts the iceberg sink's copy writers to replication's
// interface, keeping replication free of the iceberg package.
type copySink struct{ *iceberg.Sink }

func (c copySink) NewCopyWriter(relID uint32) (replication.RowWriter, error) {
	return c.Sink.NewCopyWriter(relID)
}

func (c copySink) BeginCopy(ctx context.Context, rel *decode.Relation, attnums map[int]string, lsn, resumeFrom decode.LSN, sizeHint int64) ([][2]int64, int64, error) {
	r, err := c.Sink.BeginCopy(ctx, rel, attnums, lsn, resumeFrom, sizeHint)
	return r.Done, r.Rows, err
}

func (c copySink) ChunkDone(ctx context.Context, relID uint32, w replication.RowWriter, from, to int64) error {
	cw, _ := w.(*iceberg.CopyWriter)
	return c.Sink.ChunkDone(ctx, relID, cw, from, to)
}

func (c copySink) AbortCopy(relID uint32) { c.Sink.AbortCopy(relID) }

// copyProgress is every table copy's progress, for /metrics and /status:
// set by the copy's workers, read by the metrics server.
type copyProgress struct {
	mu     sync.Mutex // guards tables
	tables map[string][2]int64
}

func newCopyProgress() *copyProgress { return &copyProgress{tables: map[string][2]int64{}} }

func (p *copyProgress) set(table string, rows, estimate int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tables[table] = [2]int64{rows, estimate}
}

func (p *copyProgress) snapshot() map[string][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.tables)
}
