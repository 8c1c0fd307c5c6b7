package iceberg

import (
	"context"
	"fmt"

	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// Values the bridge cannot have. An UPDATE that leaves a TOAST value
// unchanged does not carry it (under REPLICA IDENTITY DEFAULT or USING
// INDEX), and the bridge reads it back from the mirror's old row. Two
// windows have no such row:
//
//   - After a copy (a re-copy for ADD COLUMN ... DEFAULT or a new-column
//     retype, backfill --table, a table sync) the mirror is at the copy's
//     LSN while the changelog is behind: the changes in between go to the
//     changelog only, and the mirror holds a later state. The changelog
//     row then has those fields NULL in after and names them in its
//     unavailable column (resolveAfter); the mirror needs nothing, the copy
//     has the rows.
//   - A resumed first copy replays the stream from where its first chunks
//     were taken (L1) over rows copied later (L2), and a row changed in
//     between may be in neither (an UPDATE then DELETE of a row in a range
//     not copied yet, or an UPDATE that moved a row into a range copied
//     before). The changelog starts at L2 and skips these changes; the
//     mirror leaves such a row out and remembers its key (mirror.unknown)
//     until a change brings the whole row or deletes it. If keys are left
//     when the stream passes L2, the mirror cannot be exact from the stream
//     and the table is copied again (Commit returns it); a flush that commits the
//     mirror while keys are left first marks the table for a re-copy
//     (PropRecopy), so that a crash copies it again at the next start.

// applyMirror applies a change to st's mirror; unknown says some values of
// after are not known (see resolveAfter).
func (s *Sink) applyMirror(st *sourceTable, c *decode.Change, after decode.Tuple, unknown bool) error {
	m := st.mirror
	if !unknown && len(m.unknown) == 0 {
		return m.apply(c, after)
	}
	if err := m.applyTracked(c, after, unknown); err != nil {
		return err
	}
	if len(m.unknown) > 0 {
		s.unknownRows[st] = true
	}
	return nil
}

// applyTracked applies a change while rows are left out (see
// mirror.unknown): a change that brings a whole row, or deletes one,
// settles its key; one with values not known leaves the new row out too.
func (m *mirror) applyTracked(c *decode.Change, after decode.Tuple, unknown bool) error {
	var oldKey, newKey string
	var err error
	switch c.Op {
	case decode.Insert:
		newKey, err = m.key(c.After)
	case decode.Update:
		old := c.Before
		if old == nil {
			old = after
		}
		if oldKey, err = m.key(old); err == nil {
			newKey, err = m.key(after)
		}
	case decode.Delete:
		oldKey, err = m.key(c.Before)
	}
	if err != nil {
		return err
	}
	delete(m.unknown, oldKey)
	delete(m.unknown, newKey)
	if !unknown {
		return m.apply(c, after)
	}
	if m.unknown == nil {
		m.unknown = make(map[string]struct{})
	}
	m.changes++
	m.deleteKey(&m.batch, m.index, oldKey)
	m.unknown[newKey] = struct{}{}
	return nil
}

// copyWindowEnd returns where a resumed copy's mirror becomes exact: the
// LSN its last part was copied at (PropChangelogFrom).
func copyWindowEnd(st *sourceTable) (decode.LSN, bool) {
	v, ok := mirrorProps(st)[PropChangelogFrom]
	if !ok {
		return 0, false
	}
	lsn, err := parseLSNProp(v)
	return lsn, err == nil
}

// inCopyWindow reports whether the open transaction is in the window of a
// resumed copy of st, where the mirror may lack rows the stream changes.
func (s *Sink) inCopyWindow(st *sourceTable) bool {
	end, ok := copyWindowEnd(st)
	return ok && s.tx.commitLSN < end
}

// closeCopyWindows is called at the commit of a transaction ending at end:
// a table whose resumed copy's window this closes (every later transaction
// commits after its end) is copied again if its mirror still leaves rows
// out, or else has its re-copy mark (see markUnknownRows) cleared.
func (s *Sink) closeCopyWindows(ctx context.Context, end decode.LSN) error {
	for st := range s.unknownRows {
		m := st.mirror
		if lsn, ok := copyWindowEnd(st); ok && end < lsn {
			continue
		}
		if len(m.unknown) == 0 {
			delete(s.unknownRows, st)
			if m.recopyMarked {
				m.recopyMarked = false
				if err := s.ClearRecopy(ctx, st.rel.ID); err != nil {
					return err
				}
			}
			continue
		}
		if !m.recopyAsked {
			m.recopyAsked = true
			s.recopy = append(s.recopy, st.rel.ID)
			s.log.Warn("rows changed during a resumed copy have values the stream did not send and the copy does not have: copying the table again",
				"table", st.rel.QualifiedName(), "rows", len(m.unknown))
		}
	}
	return nil
}

// markUnknownRows marks m for a re-copy before a flush commits it while it
// leaves rows out (see mirror.unknown): a crash then copies the table again
// at the next start, since the keys are known only in memory.
func (m *mirror) markUnknownRows(ctx context.Context) error {
	if len(m.unknown) == 0 || m.recopyMarked {
		return nil
	}
	m.recopyMarked = true
	return m.setProperties(ctx, "mark a re-copy of", icego.Properties{
		PropRecopy: fmt.Sprintf("%d rows changed during a resumed copy have unknown values", len(m.unknown)),
	})
}

// columnNames names the relation columns cols (nil for none).
func columnNames(rel *decode.Relation, cols []int) []string {
	if len(cols) == 0 {
		return nil
	}
	out := make([]string, len(cols))
	for j, i := range cols {
		out[j] = rel.Columns[i].Name
	}
	return out
}
