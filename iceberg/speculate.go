package iceberg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"
)

// A streamed transaction (protocol v2 streaming: the server sends a large
// transaction in segments while it is still running) is applied ahead of
// its commit, into a speculation: data files are written but not
// committed, deletes collected, the key index changed in an overlay. At
// STREAM COMMIT the speculation joins the flush in a moment instead of the
// whole transaction being applied then, so receiving and applying overlap.
//
// It is safe to apply ahead because a transaction's rows are its own until
// it commits: a concurrent transaction that commits first cannot change a
// row this one changed (row locks, unique keys), so the two commute. What
// breaks that — a subtransaction rolled back after its changes were applied,
// a TRUNCATE, a schema change, DDL, a copy of a table — abandons the
// speculation, and the stream applies the transaction from its spool at
// commit as before. So does anything the speculation does not handle (an
// unchanged TOAST value, a table the sink does not know, a replayed
// transaction that is already in a table, a commit on another day than the
// changelog files were written for).
type speculation struct {
	xid     uint32
	day     int32 // the changelog partition its files are for: the commit's, guessed
	seq     int64
	changes int
	tables  map[*sourceTable]*specTable
	last    *sourceTable // the table of the last change, and its state
	lastT   *specTable
}

// specTable is a speculation's changes of one source table.
type specTable struct {
	b   batch             // mirror rows and deletes; nil pending until the first row
	idx *keyindex.Overlay // nil for a table without a mirror
	log *specLog          // nil without a changelog
}

// specMaxChanges bounds what a speculation holds (its key index overlay
// grows with it): a larger transaction is applied from the spool. A var
// only so that a failpoints build can lower it (spec_failpoints.go).
var specMaxChanges = specMaxFiles * specRowGroupRows

// specDayShift moves a speculation's guess of its commit's day; always 0
// but in a failpoints build (spec_failpoints.go), whose tests make the
// guess wrong to see the speculation given up for it.
var specDayShift int32

// errSpecUnsupported abandons a speculation: the transaction is applied at
// commit instead.
var errSpecUnsupported = errors.New("not applied ahead")

// SpecBegin starts applying streamed transaction xid ahead of its commit.
// It reports false when it cannot (another transaction is open).
func (s *Sink) SpecBegin(xid uint32) bool {
	if s.spec != nil {
		s.SpecAbandon("another streamed transaction started")
	}
	if s.txOpen {
		return false
	}
	// The commit's day is guessed from the last commit seen (catching up,
	// the stream is in the past), else today's.
	day := utcDay(time.Now())
	if !s.tx.commitTS.IsZero() {
		day = utcDay(s.tx.commitTS)
	}
	s.spec = &speculation{xid: xid, day: day + specDayShift, tables: make(map[*sourceTable]*specTable)}
	return true
}

// Speculating reports whether a speculation is running.
func (s *Sink) Speculating() bool { return s.spec != nil }

// SpecRelation checks a relation message of the speculated transaction:
// the transaction can be applied ahead only while its rows have the shape
// the sink writes. Otherwise the speculation is abandoned.
func (s *Sink) SpecRelation(rel *decode.Relation) bool {
	if s.spec == nil {
		return false
	}
	st, ok := s.tables[rel.ID]
	if !ok || !sameShape(st.rel, rel) || (st.mirror != nil && st.mirror.bindErr != nil) || (st.changelog != nil && st.changelog.bindErr != nil) ||
		(st.mirror != nil && missingColumns(st.mirror.rel, st.mirror.colIdx)) || (st.changelog != nil && missingColumns(st.changelog.rel, st.changelog.childOf)) {
		s.SpecAbandon("table " + rel.QualifiedName() + " changed or is new")
		return false
	}
	return true
}

// missingColumns reports whether a column of rel (one a rule does not
// exclude) has no field in the schema it is bound to by idx (see
// bindFields): the catalog is behind the source, as after an ADD COLUMN
// made while the bridge was stopped, which the start's preflight already
// sees. Only the relation message at the commit evolves the schema; a
// speculation would write its rows without the column's values (the
// randomized crash driver, seed 90).
func missingColumns(rel *decode.Relation, idx []int) bool {
	cols, err := relColumns(rel)
	if err != nil {
		return true
	}
	for i, c := range cols {
		if c.Type != nil && i < len(idx) && idx[i] < 0 {
			return true
		}
	}
	return false
}

// sameShape reports whether a relation message describes a table as the
// sink knows it: same name, same columns of the same types.
func sameShape(a, b *decode.Relation) bool {
	if a.Schema != b.Schema || a.Name != b.Name || len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		x, y := &a.Columns[i], &b.Columns[i]
		if x.Name != y.Name || x.TypeOID != y.TypeOID || x.TypeMod != y.TypeMod {
			return false
		}
	}
	return true
}

// SpecChange applies a change of the speculated transaction. An error
// abandons the speculation (the change may fail the same way at commit,
// where it counts; the transaction may yet abort).
func (s *Sink) SpecChange(c *decode.Change) error {
	sp := s.spec
	if sp == nil {
		return errSpecUnsupported
	}
	err := s.specChange(sp, c)
	if err != nil {
		s.SpecAbandon(err.Error())
	}
	return err
}

func (s *Sink) specChange(sp *speculation, c *decode.Change) error {
	crashPoint("spec-change")
	var t *specTable
	if st := s.tables[c.Rel.ID]; st != nil && st == sp.last {
		t = sp.lastT
	} else {
		if st == nil {
			return fmt.Errorf("change for unknown table %s", c.Rel.QualifiedName())
		}
		if t = sp.tables[st]; t == nil {
			if st.mirror != nil && st.rel.WholeRow {
				// Its overlay would hide all rows of a key but the last.
				return fmt.Errorf("%s is kept by the whole row: %w", c.Rel.QualifiedName(), errSpecUnsupported)
			}
			t = &specTable{}
			if st.mirror != nil {
				t.idx = keyindex.NewOverlay(st.mirror.index)
				st.mirror.peer = &t.b // a sorted file of the flush moves t's deletes of its rows
			}
			if st.changelog != nil {
				t.log = &specLog{c: st.changelog, day: sp.day}
			}
			sp.tables[st] = t
		}
		sp.last, sp.lastT = st, t
	}
	if sp.changes >= specMaxChanges {
		return fmt.Errorf("more than %d changes: %w", specMaxChanges, errSpecUnsupported)
	}
	if c.Op == decode.Update && hasUnchanged(c.After) {
		return fmt.Errorf("%s: an unchanged TOAST value: %w", c.Rel.QualifiedName(), errSpecUnsupported)
	}
	if sp.last.mirror != nil && len(sp.last.mirror.unknown) > 0 {
		return fmt.Errorf("%s: rows with unknown values: %w", c.Rel.QualifiedName(), errSpecUnsupported)
	}
	sp.seq++
	sp.changes++
	st := sp.last
	if st.mirror != nil {
		if err := st.mirror.applyTo(&t.b, t.idx, c, c.After); err != nil {
			return err
		}
	}
	if t.log != nil {
		return t.log.append(c.Op, sp.xid, sp.seq, c.Before, c.After)
	}
	return nil
}

// SpecCommit makes the speculated transaction xid the sink's open
// transaction, whole: the caller then commits it (Commit), as any other.
// It reports false when there is no speculation of xid to commit (none
// started, or abandoned): the caller then applies the transaction from its
// spool.
func (s *Sink) SpecCommit(ctx context.Context, xid uint32, commitLSN decode.LSN, commitTS time.Time) (bool, error) {
	sp := s.spec
	if sp == nil || sp.xid != xid || s.txOpen {
		return false, nil
	}
	for st, t := range sp.tables {
		if st.mirror != nil && s.isSkipped(st.mirror.icebergTable, commitLSN) ||
			st.changelog != nil && s.isSkipped(st.changelog.icebergTable, commitLSN) {
			s.SpecAbandon("the transaction is already in " + st.rel.QualifiedName())
			return false, nil
		}
		if t.log != nil && t.log.changes > 0 && utcDay(commitTS) != sp.day {
			s.SpecAbandon("committed on another day than its changelog files were written for")
			return false, nil
		}
	}
	s.spec = nil
	s.Begin(xid, commitLSN, commitTS)
	for st, t := range sp.tables {
		if st.mirror != nil {
			st.mirror.peer = nil
		}
		if m := st.mirror; m != nil && t.b.changes > 0 {
			if err := t.b.rotate(); err != nil {
				sp.discard()
				return false, err
			}
			t.idx.Merge()
			m.closed = append(m.closed, t.b.closed...)
			m.deletes = append(m.deletes, t.b.deletes...)
			m.changes += t.b.changes
		}
		if c := st.changelog; c != nil && t.log.changes > 0 {
			dfs, err := t.log.finish(commitLSN, commitTS)
			if err != nil {
				sp.discard()
				return false, err
			}
			c.closed = append(c.closed, dfs...)
			c.changes += t.log.changes
		}
		s.touched[st] = true
	}
	s.seq = sp.seq
	s.pending += sp.changes
	crashPoint("spec-commit")
	s.log.Info("streamed transaction applied ahead", "xid", xid, "changes", sp.changes, "commit_lsn", commitLSN)
	return true, nil
}

// isSkipped reports whether a transaction committed at commitLSN is
// already in t (see skip).
func (s *Sink) isSkipped(t *icebergTable, commitLSN decode.LSN) bool { return commitLSN < t.watermark }

// SpecAbandon drops the speculation, if any: its files stay as orphans,
// nothing references them.
func (s *Sink) SpecAbandon(reason string) {
	if s.spec == nil {
		return
	}
	s.log.Info("streamed transaction will be applied at its commit", "xid", s.spec.xid, "applied_ahead", s.spec.changes, "reason", reason)
	s.spec.discard()
	s.spec = nil
	crashPoint("spec-abort")
}

// abandonSpecFor abandons the speculation when it changed st.
func (s *Sink) abandonSpecFor(st *sourceTable, reason string) {
	if s.spec != nil && s.spec.tables[st] != nil {
		s.SpecAbandon(reason)
	}
}

func (sp *speculation) discard() {
	for st, t := range sp.tables {
		if st.mirror != nil {
			st.mirror.peer = nil
		}
		t.b.abortOpen()
		if t.log != nil {
			t.log.abort()
		}
	}
	clear(sp.tables)
}
