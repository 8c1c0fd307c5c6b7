package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// PropSourceOID is the table property naming the source table a mirror or
// changelog belongs to: its pg_class OID, within the source identity of
// the table's snapshots (PropSource). A table dropped and created again
// under the same name has another OID, so its Iceberg tables are not the
// old one's (see claimTable).
//
// An OID is reused only once the cluster's 32-bit OID counter has wrapped
// around to it; a table created again under the same name that gets the
// very OID of the dropped one is taken for it. Nothing the catalog keeps
// tells the two apart more surely (relfilenode and the pg_class row's xmin
// change with TRUNCATE, VACUUM FULL and ALTER TABLE).
const PropSourceOID = "pg2iceberg.source-oid"

// openOwn opens (creating when missing) the Iceberg table ident of source
// table rel: a table there that records another source table is set aside
// first (claimTable), and one that records none is adopted (its OID
// recorded now, as for a table created by an earlier version).
func (s *Sink) openOwn(ctx context.Context, ident table.Identifier, rel *decode.Relation, sc *icego.Schema, spec *icego.PartitionSpec) (*icebergTable, error) {
	if err := s.claimTable(ctx, ident, rel); err != nil {
		return nil, err
	}
	oid := strconv.FormatUint(uint64(rel.ID), 10)
	extra := icego.Properties{}
	maps.Copy(extra, s.cfg.Rules.Policies(rel.QualifiedName()).Properties)
	extra[PropSourceOID] = oid
	t, err := s.openTable(ctx, ident, sc, spec, extra)
	if err != nil {
		return nil, err
	}
	r := s.cfg.Rules.Policies(rel.QualifiedName()).Retention
	t.upkeep.Retention = tiering.Retention{MaxSnapshotAge: r.MaxSnapshotAge, MinSnapshots: r.MinSnapshots}.Or(s.cfg.Retention)
	if t.tbl.Properties()[PropSourceOID] != oid {
		if err := t.setProperties(ctx, "record the source table of", icego.Properties{PropSourceOID: oid}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// claimTable makes sure that the Iceberg table ident, if there is one, is
// rel's or records no source table. One recorded for another OID belongs
// to a table since dropped (and created again under rel's name while the
// bridge did not see the DROP): by the table's drop_table policy it is
// renamed aside to <name>__dropped_<oid> (keep: its files stay where they
// are, so the new table gets a location of its own, see ensureTable) and
// marked dropped, or dropped.
func (s *Sink) claimTable(ctx context.Context, ident table.Identifier, rel *decode.Relation) error {
	tbl, err := s.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load table %v: %w", ident, err)
	}
	was, ok := tbl.Properties()[PropSourceOID]
	if !ok || was == strconv.FormatUint(uint64(rel.ID), 10) {
		return nil
	}
	name := strings.Join(ident, ".")
	stale := s.tableAt(ident) // the old table, while the bridge streams
	if stale != nil {
		s.abandonSpecFor(stale, "table "+stale.rel.QualifiedName()+" was dropped and created again")
	}
	if s.cfg.Rules.Policies(rel.QualifiedName()).DropTable == "drop" {
		if err := s.cat.DropTable(ctx, ident); err != nil && !errors.Is(err, catalog.ErrNoSuchTable) {
			return fmt.Errorf("drop %s (it belongs to source table %s, dropped since; drop_table: drop): %w", name, was, err)
		}
		if stale != nil {
			delete(s.tables, stale.rel.ID)
		}
		s.log.Info("source table created again: the Iceberg table of the dropped one is dropped", "table", name, "old_oid", was, "oid", rel.ID, "policy", "drop")
		return nil
	}
	aside, err := s.asideName(ctx, ident, was)
	if err != nil {
		return err
	}
	if _, err := s.cat.RenameTable(ctx, ident, aside); err != nil {
		return fmt.Errorf("rename %s aside to %s (it belongs to source table %s, dropped since; drop_table: keep): %w", name, strings.Join(aside, "."), was, err)
	}
	t, err := openTable(ctx, s.cat, aside, nil, nil, "", nil)
	if err != nil {
		return err
	}
	if _, marked := t.tbl.Properties()[PropDropped]; !marked {
		mark, _ := json.Marshal(map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "oid": json.Number(was), "replaced_by": rel.ID})
		if err := t.setProperties(ctx, "mark dropped:", icego.Properties{PropDropped: string(mark)}); err != nil {
			return err
		}
	}
	if stale != nil {
		// Its changes not yet flushed go where the table went.
		old := stale.tableAt(ident)
		old.ident, old.tbl = aside, t.tbl
	}
	s.log.Warn("source table created again: the Iceberg table of the dropped one is kept under another name", "table", name, "kept_as", strings.Join(aside, "."), "old_oid", was, "oid", rel.ID, "policy", "keep")
	return nil
}

// asideName is the first free name <name>__dropped_<oid>[_<n>] for the
// Iceberg table ident of dropped source table oid; a changelog's keeps its
// suffix (<name>__dropped_<oid>__changelog).
func (s *Sink) asideName(ctx context.Context, ident table.Identifier, oid string) (table.Identifier, error) {
	last := ident[len(ident)-1]
	base, suffix := last, ""
	if b, ok := strings.CutSuffix(last, ChangelogSuffix); ok {
		base, suffix = b, ChangelogSuffix
	}
	for n := 1; ; n++ {
		name := base + "__dropped_" + oid
		if n > 1 {
			name += "_" + strconv.Itoa(n)
		}
		aside := append(table.Identifier(nil), ident[:len(ident)-1]...)
		aside = append(aside, name+suffix)
		_, err := s.cat.LoadTable(ctx, aside)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return aside, nil
		}
		if err != nil {
			return nil, fmt.Errorf("load table %v: %w", aside, err)
		}
	}
}

// tableAt returns the source table whose mirror or changelog is the
// Iceberg table ident, if any.
func (s *Sink) tableAt(ident table.Identifier) *sourceTable {
	for _, st := range s.tables {
		if st.tableAt(ident) != nil {
			return st
		}
	}
	return nil
}

// tableAt returns st's mirror or changelog if it is the Iceberg table
// ident, else nil.
func (st *sourceTable) tableAt(ident table.Identifier) *icebergTable {
	for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
		if t != nil && slices.Equal(t.ident, ident) {
			return t
		}
	}
	return nil
}
