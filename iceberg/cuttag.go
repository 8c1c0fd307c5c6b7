package iceberg

import (
	"context"
	"fmt"
	"strconv"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TagConsistent is the tag the bridge moves after each flush when
// Config.ConsistentTag is on: every table's at its snapshot of the newest
// complete cut, for engines that read refs (VERSION AS OF 'consistent').
// The tags move one table after another, so a reader that loads the tables
// one by one can see one before a move and the next after it; the served
// catalog's pinned cut, or a tag made by tag create --all (never moved),
// is the safe way to read tables together.
const TagConsistent = "consistent"

// moveConsistentTags points every table's TagConsistent at its current
// snapshot, after a flush that committed every table through s.durable: the
// current snapshot is then each table's state at that LSN, which the same
// commit records as PropCut. Tables whose tag is there already are not
// committed; a failure is logged and never fails the flush (the tag then
// lags until the next flush moves it).
func (s *Sink) moveConsistentTags(ctx context.Context) {
	if !s.cfg.ConsistentTag || s.copyInProgress() {
		return
	}
	for _, st := range s.tables {
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil {
				continue
			}
			if err := t.moveTag(ctx, s); err != nil {
				s.log.Warn("consistent tag not moved; the next flush tries again", "table", t.name(), "error", err)
			}
		}
	}
}

// moveTag is moveConsistentTags for one table: one ref-only commit that
// asserts where the tag was.
func (t *icebergTable) moveTag(ctx context.Context, s *Sink) error {
	cur := t.tbl.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	var was *int64
	for name, ref := range t.tbl.Metadata().Refs() {
		if name == TagConsistent {
			id := ref.SnapshotID
			was = &id
		}
	}
	if was != nil && *was == cur.SnapshotID {
		return nil
	}
	reqs := []table.Requirement{table.AssertTableUUID(t.tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(TagConsistent, was)}
	updates := []table.Update{
		table.NewSetSnapshotRefUpdate(TagConsistent, cur.SnapshotID, table.TagRef, 0, 0, 0),
		table.NewSetPropertiesUpdate(icego.Properties{PropCut: strconv.FormatUint(uint64(s.durable), 10)}),
	}
	if _, _, err := s.cat.CommitTable(ctx, t.ident, reqs, updates); err != nil {
		return fmt.Errorf("move tag %s of %s: %w", TagConsistent, t.name(), err)
	}
	tbl, err := s.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return fmt.Errorf("reload %s: %w", t.name(), err)
	}
	t.committedTo(tbl)
	return nil
}
