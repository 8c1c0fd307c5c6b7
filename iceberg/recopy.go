package iceberg

// The re-copy bookkeeping: the resync row a changelog gets for each copy
// that replaces a mirror, and the marks that say a mirror is to be copied
// again (and why) across restarts.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// recordResync appends a resync row (op R, lsn, no images) to a table's
// changelog: committed at once between transactions, else with the open
// transaction.
func (s *Sink) recordResync(ctx context.Context, st *sourceTable, lsn decode.LSN) error {
	c := st.changelog
	c.resyncAt = lsn // PropResyncAt, with the row's commit
	s.seq++
	if err := c.append(decode.Resync, txInfo{commitLSN: lsn, commitTS: time.Now()}, s.seq, nil, nil, nil); err != nil {
		return err
	}
	if s.txOpen {
		s.touched[st] = true
		return nil
	}
	c.lastEnd = c.watermark // the stream's position is unchanged
	return c.flush(ctx, s)
}

// PropResyncAt is the LSN of the last resync row: on a mirror, set by the
// commit that marks a copy again complete; on its changelog, by the commit
// of the resync row that follows. A mirror's ahead of its changelog's is a
// row a crash cut off (see ResyncPending).
const PropResyncAt = "pg2iceberg.resync-at"

// ResyncPending writes the resync rows a crash cut off between a re-copy's
// completion and its changelog commit (see PropResyncAt); it runs at start,
// between transactions.
func (s *Sink) ResyncPending(ctx context.Context) error {
	for _, st := range s.tables {
		if st.mirror == nil || st.changelog == nil {
			continue
		}
		at := st.mirror.tbl.Properties()[PropResyncAt]
		if at == "" || st.changelog.tbl.Properties()[PropResyncAt] == at {
			continue
		}
		lsn, err := strconv.ParseUint(at, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: table property %s = %q is not an LSN", st.mirror.name(), PropResyncAt, at)
		}
		if s.log != nil {
			s.log.Info("a re-copy's resync row was cut off by a stop: writing it", "table", st.rel.QualifiedName(), "lsn", decode.LSN(lsn))
		}
		if err := s.recordResync(ctx, st, decode.LSN(lsn)); err != nil {
			return err
		}
	}
	return nil
}

// PropRecopy is the mirror table property set while a table is copied
// again for values no change event carries (ADD COLUMN ... DEFAULT, a
// retype under new-column): FinishCopy removes it, and a start that finds
// it copies the table again (see RecopyPending).
const PropRecopy = "pg2iceberg.recopy"

// MarkRecopy records why relID's mirror is about to be copied again.
func (s *Sink) MarkRecopy(ctx context.Context, relID uint32, reason string) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	return st.mirror.setProperties(ctx, "mark a re-copy of", icego.Properties{PropRecopy: reason})
}

// ClearRecopy removes the mark a schema change set (see icebergTable.evolve)
// once the caller found that the added columns need no copy.
func (s *Sink) ClearRecopy(ctx context.Context, relID uint32) error {
	st, ok := s.tables[relID]
	if !ok || st.mirror == nil {
		return nil
	}
	m := st.mirror
	if _, pending := m.tbl.Properties()[PropRecopy]; !pending {
		return nil
	}
	return m.removeProperties(ctx, "clear the re-copy mark of", PropRecopy)
}

// recopyCheck starts the PropRecopy value a schema change's commit sets
// (icebergTable.evolve) until its caller decides whether the added or
// retyped columns need a copy; the JSON after it is their
// decode.NewColumns, so that a start after a crash in between can take
// the same decision (see RecopyCheck).
const recopyCheck = "to check: "

func checkMark(nc decode.NewColumns) string {
	b, err := json.Marshal(nc)
	if err != nil {
		// Slices of strings always marshal; keep the mark anyway, which
		// makes the start copy the table.
		return recopyCheck + fmt.Sprintf("added %v, retyped %v", nc.Added, nc.Retyped)
	}
	return recopyCheck + string(b)
}

// RecopyCheck returns the columns of relID's mirror whose copy decision a
// crash interrupted: the mark its schema commit set is still there (see
// checkMark). ok is false when the mirror has no such mark: none, or one
// of a copy that must run again.
func (s *Sink) RecopyCheck(relID uint32) (nc decode.NewColumns, ok bool) {
	st, found := s.tables[relID]
	if !found || st.mirror == nil {
		return nc, false
	}
	return parseCheckMark(st.mirror.tbl.Properties()[PropRecopy])
}

// parseCheckMark reads a mark checkMark wrote; any other value (a copy to
// run, a mark of an older version) is not one.
func parseCheckMark(v string) (nc decode.NewColumns, ok bool) {
	v, marked := strings.CutPrefix(v, recopyCheck)
	if !marked || json.Unmarshal([]byte(v), &nc) != nil {
		return decode.NewColumns{}, false
	}
	return nc, true
}

// RecopyPending returns the tables whose re-copy (MarkRecopy) did not
// finish.
func (s *Sink) RecopyPending() []*decode.Relation {
	var out []*decode.Relation
	for _, st := range s.tables {
		if st.mirror == nil {
			continue
		}
		if _, ok := st.mirror.tbl.Properties()[PropRecopy]; ok {
			out = append(out, st.rel)
		}
	}
	return out
}
