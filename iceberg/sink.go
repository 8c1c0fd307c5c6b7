package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// SourceID identifies the stream a table is written from.
type SourceID struct {
	SystemID string // pg_control system identifier
	Database string
	Slot     string
}

func (s SourceID) String() string { return s.SystemID + "/" + s.Database + "/" + s.Slot }

// Config configures a Sink. The zero value flushes with the defaults.
type Config struct {
	Source SourceID
	// NoChangelog turns the changelog tables off.
	NoChangelog bool
	// ConsistentTag moves each table's tag "consistent" (TagConsistent) to
	// the newest complete cut after every flush: one ref-only commit more
	// per table that changed.
	ConsistentTag bool
	// FlushRows, FlushBytes and FlushInterval bound a batch: a flush happens
	// at the first transaction boundary after any is reached.
	FlushRows     int
	FlushBytes    int64
	FlushInterval time.Duration
	// Columns describes a column that relation messages announce and the
	// sink has not seen described (added or retyped while streaming): its
	// Type, TypeName and Rule, as preflight sets them. Without it only
	// built-in types are known, by OID, and no rule applies.
	Columns ColumnDescriber
	// Rules is the configuration file (may be nil): its table policies
	// decide incompatible type changes and dropped tables.
	Rules *mapping.Overrides
	// Retention is the snapshot retention of tables without one of their
	// own in Rules (its zero value: each table's properties decide).
	Retention tiering.Retention
	// Stats receives the sink's counters (nil: counters of its own), so
	// that a metrics server started before the sink reads them, and a
	// sink that replaces a discarded one (see Discard) goes on with them.
	Stats *Stats
	// KeyIndex bounds the memory of each mirror's key index (its zero
	// value: all in memory).
	KeyIndex KeyIndexConfig
}

// ColumnDescriber looks up a column of a source table in the source's
// catalog: it sets c's Type, TypeName and Override as preflight sets them
// (replication.Source implements it over the bridge's SQL connection).
type ColumnDescriber interface {
	DescribeColumn(ctx context.Context, rel *decode.Relation, c *decode.Column) error
}

// Defaults for Config.
const (
	DefaultFlushRows     = 500_000
	DefaultFlushBytes    = 256 << 20
	DefaultFlushInterval = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.FlushRows <= 0 {
		c.FlushRows = DefaultFlushRows
	}
	if c.FlushBytes <= 0 {
		c.FlushBytes = DefaultFlushBytes
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	return c
}

// sourceTable is the state kept for one published table.
type sourceTable struct {
	rel       *decode.Relation
	mirror    *mirror    // nil for a table without a key
	changelog *changelog // nil when changelogs are off
	// mirrorAdded: the mirror was made while streaming for a table that
	// had a changelog only (AddMirror); its changelog is not new.
	mirrorAdded bool
}

// Sink applies whole source transactions to the Iceberg tables.
type Sink struct {
	cat    catalog.Catalog
	cfg    Config
	log    *slog.Logger
	tables map[uint32]*sourceTable // by relation OID

	txOpen  bool
	tx      txInfo
	seq     int64
	touched map[*sourceTable]bool
	last    *sourceTable // the table of the last change, in touched

	spec *speculation // a streamed transaction applied ahead of its commit

	lastEnd    decode.LSN // end LSN of the last transaction seen
	durable    decode.LSN // every transaction ending at or below is committed
	pending    int        // changes in this flush, all tables
	flushStart time.Time

	stats *Stats

	dropped []uint32 // tables the open transaction drops, see applyDrops
	// droppedGone are the DROP TABLE events of the open transaction for
	// tables not in s.tables, see applyGoneDrops.
	droppedGone []decode.DDLEvent
	keyChanges  map[uint32][]string // new keys the open transaction gives tables (nil: the whole row), see applyKeyChanges
	keyGained   []uint32            // tables without a mirror given a key, returned by Commit
	// unknownRows are the tables whose mirrors left out rows with values
	// nobody knows (see mirror.unknown); recopy the tables to copy again
	// for them, returned by Commit.
	unknownRows map[*sourceTable]bool
	recopy      []uint32

	copyMu  sync.Mutex               // guards copying and runs
	copying map[uint32][]*CopyWriter // writers of copies in progress, by table
	runs    map[uint32]*copyRun      // copies in progress, by table
}

// NewSink returns a Sink writing through cat.
func NewSink(cat catalog.Catalog, cfg Config, log *slog.Logger) *Sink {
	if cfg.Stats == nil {
		cfg.Stats = &Stats{}
	}
	return &Sink{cat: cat, cfg: cfg.withDefaults(), log: log, stats: cfg.Stats, tables: make(map[uint32]*sourceTable), touched: make(map[*sourceTable]bool), copying: make(map[uint32][]*CopyWriter), runs: make(map[uint32]*copyRun), keyChanges: make(map[uint32][]string), unknownRows: make(map[*sourceTable]bool)}
}

// Identifiers returns the mirror and changelog identifiers of a source table.
func Identifiers(schema, name string) (mirror, changelog table.Identifier) {
	return table.Identifier{schema, name}, table.Identifier{schema, name + ChangelogSuffix}
}

// openTable opens (creating when missing) one of the sink's Iceberg tables.
func (s *Sink) openTable(ctx context.Context, ident table.Identifier, sc *icego.Schema, spec *icego.PartitionSpec, extra icego.Properties) (*icebergTable, error) {
	t, err := openTable(ctx, s.cat, ident, sc, spec, s.cfg.Source.String(), extra)
	if err != nil {
		return nil, err
	}
	t.log, t.stats = s.log, s.stats
	t.upkeep.Keep = []string{keyindex.FileName}
	return t, nil
}

// Has reports whether the source table is known to the sink.
func (s *Sink) Has(relID uint32) bool {
	_, ok := s.tables[relID]
	return ok
}

// Begin opens a source transaction.
func (s *Sink) Begin(xid uint32, commitLSN decode.LSN, commitTS time.Time) {
	s.txOpen = true
	s.tx = txInfo{xid: xid, commitLSN: commitLSN, commitTS: commitTS}
	s.seq = 0
	clear(s.touched)
	s.last = nil
}

// skip reports whether the open transaction is already in t.
func (s *Sink) skip(t *icebergTable) bool { return s.isSkipped(t, s.tx.commitLSN) }

// Change applies a row change of the open transaction. c and the data of
// its tuples are valid only until Change returns (the stream decodes into
// reused buffers that alias the receive buffer): whatever is kept is
// copied — the key index keeps keys as strings or integers, the Arrow
// builders copy values.
func (s *Sink) Change(c *decode.Change) error {
	if !s.txOpen {
		return errors.New("change outside a transaction")
	}
	crashPoint("mid-batch")
	st, ok := s.tables[c.Rel.ID]
	if !ok {
		return fmt.Errorf("change for unknown table %s", c.Rel.QualifiedName())
	}
	s.seq++
	toMirror := st.mirror != nil && !s.skip(st.mirror.icebergTable)
	toLog := st.changelog != nil && !s.skip(st.changelog.icebergTable)
	after, unknown := c.After, []int(nil)
	if c.Op == decode.Update && hasUnchanged(after) && (toMirror || toLog) {
		var err error
		if after, unknown, err = s.resolveAfter(st, c, toMirror); err != nil {
			return err
		}
	}
	if toMirror {
		if err := s.applyMirror(st, c, after, unknown != nil); err != nil {
			return err
		}
	}
	if toLog {
		if err := st.changelog.append(c.Op, s.tx, s.seq, c.Before, after, columnNames(st.rel, unknown)); err != nil {
			return err
		}
	}
	if (toMirror || toLog) && st != s.last {
		// A transaction's changes mostly hit one table: no map write per change.
		s.touched[st] = true
		s.last = st
	}
	s.pending++
	return nil
}

// Truncate applies a TRUNCATE of the open transaction.
func (s *Sink) Truncate(rels []*decode.Relation) error {
	for _, rel := range rels {
		st, ok := s.tables[rel.ID]
		if !ok {
			continue
		}
		s.abandonSpecFor(st, "table "+rel.QualifiedName()+" truncated")
		s.seq++
		if st.mirror != nil && !s.skip(st.mirror.icebergTable) {
			st.mirror.truncate()
			s.touched[st] = true
		}
		if st.changelog != nil && !s.skip(st.changelog.icebergTable) {
			if err := st.changelog.append(decode.Truncate, s.tx, s.seq, nil, nil, nil); err != nil {
				return err
			}
			s.touched[st] = true
		}
		s.pending++
	}
	return nil
}

// Commit closes the open transaction, which ends at end, and flushes when a
// batch limit is reached. It returns the tables the transaction leaves to
// copy: keyGained, tables without a mirror that a DDL event gave a key (the
// caller makes the mirror, AddMirror, and copies the table); recopy, tables
// whose mirrors the stream cannot make exact (see closeCopyWindows), to
// copy again.
func (s *Sink) Commit(ctx context.Context, end decode.LSN) (keyGained, recopy []uint32, err error) {
	if err := s.commit(ctx, end); err != nil {
		return nil, nil, err
	}
	keyGained, recopy = s.keyGained, s.recopy
	s.keyGained, s.recopy = nil, nil
	return keyGained, recopy, nil
}

func (s *Sink) commit(ctx context.Context, end decode.LSN) error {
	if len(s.unknownRows) > 0 {
		if err := s.closeCopyWindows(ctx, end); err != nil {
			return err
		}
	}
	for st := range s.touched {
		if st.mirror != nil && st.mirror.changes > 0 {
			st.mirror.lastEnd = end
		}
		if st.changelog != nil && st.changelog.changes > 0 {
			st.changelog.lastEnd = end
		}
	}
	s.tx.endLSN = end
	s.txOpen = false
	s.lastEnd = end
	if len(s.dropped) > 0 || len(s.droppedGone) > 0 || len(s.keyChanges) > 0 {
		var replay *ReplayError
		if err := s.Flush(ctx); errors.As(err, &replay) {
			// The replay brings this transaction's events again.
			s.dropped, s.droppedGone = nil, nil
			clear(s.keyChanges)
			return err
		} else if err != nil {
			return err
		}
		if err := s.applyKeyChanges(ctx); err != nil {
			return err
		}
		return s.applyDrops(ctx)
	}
	if s.pending == 0 {
		// Nothing of ours is waiting: this transaction is as good as durable.
		s.durable = end
		s.stats.sourceCommitted(s.tx.commitTS)
		return nil
	}
	if s.flushStart.IsZero() {
		s.flushStart = time.Now()
		s.stats.pendingSince(s.tx.commitTS)
	}
	if s.pending >= s.cfg.FlushRows || s.pendingBytes() >= s.cfg.FlushBytes {
		return s.Flush(ctx)
	}
	return nil
}

func (s *Sink) pendingBytes() int64 {
	var n int64
	for _, st := range s.tables {
		if st.mirror != nil {
			n += st.mirror.openBytes()
		}
		if st.changelog != nil {
			for _, fw := range st.changelog.files {
				n += fw.bytes()
			}
		}
	}
	return n
}

// Tick flushes when the oldest pending change is older than the flush
// interval. Call it between transactions.
func (s *Sink) Tick(ctx context.Context, now time.Time) error {
	if s.txOpen || s.pending == 0 || now.Sub(s.flushStart) < s.cfg.FlushInterval {
		return nil
	}
	return s.Flush(ctx)
}

// lastFlushCommit is the table Flush commits last, going through order
// (nil: none): the last one with changes, a mirror after its changelog.
func lastFlushCommit(order []*sourceTable) *icebergTable {
	var last *icebergTable
	for _, st := range order {
		if st.changelog != nil && st.changelog.changes > 0 {
			last = changelogTable(st.changelog)
		}
		if st.mirror != nil && st.mirror.changes > 0 {
			last = mirrorTable(st.mirror)
		}
	}
	return last
}

// Flush commits every table with pending changes. It must be called
// between transactions.
func (s *Sink) Flush(ctx context.Context) error {
	if s.txOpen {
		return errors.New("flush inside a transaction")
	}
	if s.pending == 0 {
		s.durable = s.lastEnd
		return nil
	}
	start := time.Now()
	rows, tables, bytes := s.pending, 0, s.pendingBytes()
	var moved []string // mirrors whose batches an outside commit dropped
	order := slices.Collect(maps.Values(s.tables))
	last := lastFlushCommit(order)
	for _, st := range order {
		// Every table was committed through s.durable before this flush:
		// its commits record that as the complete cut (PropCut). The
		// flush's last commit records s.lastEnd: once it is in, every
		// table is committed through s.lastEnd (unless a batch was
		// dropped on the way), so the cut is the flush's own, and there
		// is one after the first flush.
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil {
				continue
			}
			t.cut = s.durable
			if t == last && len(moved) == 0 {
				t.cut = s.lastEnd
			}
		}
		// The changelog commits first: a mirror is then never ahead of its
		// changelog, so a replayed change that reads an unchanged value back
		// from the mirror reads the state before that change.
		committed := false
		if st.changelog != nil && st.changelog.changes > 0 {
			if err := st.changelog.flush(ctx, s); err != nil {
				return err
			}
			committed = true
		}
		if st.mirror != nil && st.mirror.changes > 0 {
			err := st.mirror.flush(ctx, s)
			if errors.Is(err, errRowsMoved) {
				moved = append(moved, st.mirror.name())
				continue
			}
			if err != nil {
				return err
			}
			committed = true
		}
		if committed {
			tables++
		}
	}
	if len(moved) > 0 {
		// Every other table committed; the dropped batches came after the
		// last flush, which s.durable stays at.
		s.pending, s.flushStart = 0, time.Time{}
		s.publishStatus()
		return &ReplayError{From: s.durable, Tables: moved}
	}
	s.pending, s.flushStart, s.durable = 0, time.Time{}, s.lastEnd
	// Between transactions s.tx is the last one ended: the newest source
	// commit this flush makes durable.
	s.stats.flushed(rows, bytes, time.Since(start), s.tx.commitTS)
	s.afterFlush(ctx)
	s.moveConsistentTags(ctx)
	s.stats.Changes.Add(int64(rows))
	s.stats.Flushes.Add(1)
	s.publishStatus()
	crashPoint("after-commit")
	s.log.Info("batch committed", "tables", tables, "changes", rows, "lsn", s.lastEnd, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// Durable returns the LSN up to which every source transaction is committed
// to Iceberg (or touched no table of ours): the LSN to acknowledge.
func (s *Sink) Durable() decode.LSN { return s.durable }

// SaveIndexes persists every mirror's key index for its current snapshot,
// so the next start can skip reading the tables. Call after a final Flush.
func (s *Sink) SaveIndexes() error {
	if s.txOpen || s.pending > 0 {
		return errors.New("save key indexes with changes pending")
	}
	s.stopCompactions()
	var errs []error
	for _, st := range s.tables {
		if st.mirror != nil {
			errs = append(errs, st.mirror.saveIndex())
		}
	}
	return errors.Join(errs...)
}

// InTransaction reports whether a source transaction is partly applied.
func (s *Sink) InTransaction() bool { return s.txOpen }

// Idle reports whether nothing is pending and no transaction is open.
func (s *Sink) Idle() bool { return !s.txOpen && s.pending == 0 }

func mirrorTable(m *mirror) *icebergTable {
	if m == nil {
		return nil
	}
	return m.icebergTable
}

func changelogTable(c *changelog) *icebergTable {
	if c == nil {
		return nil
	}
	return c.icebergTable
}
