package iceberg

import (
	"context"
	"fmt"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/evolution"
)

// The sink's source tables: adding one (its mirror and changelog, loaded
// or created) and the relation messages that describe it.

// openMirror opens (creating when missing) rel's mirror table.
func (s *Sink) openMirror(ctx context.Context, rel *decode.Relation) (*mirror, error) {
	sc, err := MirrorSchema(rel)
	if err != nil {
		return nil, err
	}
	mid, _ := Identifiers(rel.Schema, rel.Name)
	pol := s.cfg.Rules.Policies(rel.QualifiedName())
	fields := pol.Partition
	var spec *icego.PartitionSpec
	if len(fields) > 0 {
		ps, err := ConfiguredSpec(sc, fields)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel.QualifiedName(), err)
		}
		spec = &ps
	}
	t, err := s.openOwn(ctx, mid, rel, sc, spec)
	if err != nil {
		return nil, err
	}
	if err := t.followConfiguredSpec(ctx, fields); err != nil {
		return nil, err
	}
	if err := t.followConfiguredSort(ctx, pol.Sort); err != nil {
		return nil, err
	}
	if pol.FormatVersion >= 3 && rel.WholeRow {
		return nil, fmt.Errorf("%s: format_version 3 needs a key: the mirror is kept by the whole row (REPLICA IDENTITY FULL without a primary key), whose repeated rows a deletion vector's rewrite of a flush's own file cannot move; add a primary key or set format_version: 2 for this table", rel.QualifiedName())
	}
	if err := t.followFormatVersion(ctx, pol.FormatVersion); err != nil {
		return nil, err
	}
	m, err := newMirror(t, rel)
	if err != nil {
		return nil, err
	}
	m.indexDisk = s.cfg.KeyIndex // attached by loadIndex or rebuildIndex
	return m, nil
}

// openChangelog opens (creating when missing) rel's changelog table cid,
// partitioned by the configuration's changelog_partition, else by
// day(commit_ts). A spec another writer set stands while the
// configuration does not change (see followConfiguredSpec); removing
// changelog_partition goes back to day(commit_ts).
func (s *Sink) openChangelog(ctx context.Context, cid table.Identifier, rel *decode.Relation) (*changelog, error) {
	sc, err := ChangelogSchema(rel)
	if err != nil {
		return nil, err
	}
	fields := s.cfg.Rules.Policies(rel.QualifiedName()).ChangelogPartition
	spec := ChangelogSpec(sc)
	if len(fields) > 0 {
		if spec, err = ConfiguredSpec(sc, fields); err != nil {
			return nil, fmt.Errorf("%s changelog_partition: %w", rel.QualifiedName(), err)
		}
		if _, err := newChangelogPart(rel.QualifiedName()+"'s changelog", spec, sc); err != nil {
			return nil, err
		}
	}
	t, err := s.openOwn(ctx, cid, rel, sc, &spec)
	if err != nil {
		return nil, err
	}
	if _, ok := t.tbl.Properties()[PropPartition]; ok && len(fields) == 0 {
		fields = []string{DefaultChangelogPartition}
	}
	if err := t.followConfiguredSpec(ctx, fields); err != nil {
		return nil, err
	}
	if err := addUnavailable(ctx, t); err != nil {
		return nil, err
	}
	return newChangelog(t, rel)
}

// AddTable opens (creating when missing) the Iceberg tables of rel, reads
// their watermarks and rebuilds the mirror's key index. rel's columns must
// carry NotNull and TypeName from the catalog.
func (s *Sink) AddTable(ctx context.Context, rel *decode.Relation) error {
	if err := s.CheckNames([]*decode.Relation{rel}); err != nil {
		return err
	}
	st := &sourceTable{rel: rel}
	mid, cid := Identifiers(rel.Schema, rel.Name)
	if rel.HasKey() {
		if rel.KeyNote != "" {
			s.log.Warn("table key", "table", rel.QualifiedName(), "note", rel.KeyNote)
		}
		var err error
		if st.mirror, err = s.openMirror(ctx, rel); err != nil {
			return err
		}
		t := st.mirror.icebergTable
		start := time.Now()
		if t.tbl.CurrentSnapshot() != nil && !sameKey(st.mirror, rel) {
			// The key changed while the bridge was stopped (or without the
			// DDL capture): re-key the mirror, which rebuilds the index.
			if err := s.changeKey(ctx, st.mirror, rel, schemaLSN(t.tbl)); err != nil {
				return err
			}
		} else if err := st.mirror.loadIndex(); err == nil {
			s.log.Info("key index loaded", "table", rel.QualifiedName(), "rows", st.mirror.index.Len(), "watermark", t.watermark, "elapsed", time.Since(start).Round(time.Millisecond))
		} else {
			if err := st.mirror.rebuildIndex(ctx); err != nil {
				if err := st.mirror.recopyForeign(ctx, err); err != nil {
					return err
				}
			}
			s.log.Info("key index rebuilt", "table", rel.QualifiedName(), "rows", st.mirror.index.Len(), "watermark", t.watermark, "elapsed", time.Since(start).Round(time.Millisecond))
		}
	} else {
		fix := rel.KeyNote
		if fix == "" {
			fix = "add a primary key, or run ALTER TABLE " + rel.QuotedName() + " REPLICA IDENTITY FULL (the mirror is then kept by the whole row)"
		}
		s.log.Warn("table has no key to keep a mirror by: it gets a changelog only", "table", rel.QualifiedName(), "fix", fix)
		// A mirror of another table of this name (dropped since) goes by
		// its policy all the same.
		if err := s.claimTable(ctx, mid, rel); err != nil {
			return err
		}
	}
	if !s.cfg.NoChangelog {
		c, err := s.openChangelog(ctx, cid, rel)
		if err != nil {
			return err
		}
		st.changelog = c
	}
	// The copy's LSN is a floor for the mirror's watermark: stream changes
	// below it are in the copy (an empty copy commits no snapshot to carry
	// it). Not for the changelog, which records every change it is sent.
	if lsn, ok := s.copyLSN(st); ok {
		st.mirror.watermark = max(st.mirror.watermark, lsn)
	}
	// A resumed copy is consistent only from where its last part was taken:
	// the changelog starts there (see FinishCopy).
	if v, ok := mirrorProps(st)[PropChangelogFrom]; ok && st.changelog != nil {
		if lsn, err := parseLSNProp(v); err == nil {
			st.changelog.watermark = max(st.changelog.watermark, lsn)
		}
	}
	s.tables[rel.ID] = st
	s.publishStatus()
	return nil
}

// Relation handles a relation message from the stream: it evolves the
// Iceberg schemas when the table's shape changed (see package evolution)
// and rebinds the writers. Rows already written in this flush stay in files
// of the old schema, closed here; all are committed together.
//
// When the mirror's schema changed, it returns the columns whose existing
// rows may hold values no change event carries (nil when it did not): the
// caller decides whether the table is copied again, and otherwise clears
// the re-copy mark the schema commit set (ClearRecopy).
func (s *Sink) Relation(ctx context.Context, rel *decode.Relation) (*decode.NewColumns, error) {
	st, ok := s.tables[rel.ID]
	if !ok {
		return nil, fmt.Errorf("table %s appeared in the stream but is not known; it must be copied first", rel.QualifiedName())
	}
	if !sameShape(st.rel, rel) {
		s.abandonSpecFor(st, "table "+st.rel.QualifiedName()+" changed")
	}
	if rel.Schema != st.rel.Schema || rel.Name != st.rel.Name {
		if err := s.renameTable(ctx, st, rel); err != nil {
			return nil, err
		}
	}
	if err := s.describeColumns(ctx, st, rel); err != nil {
		return nil, err
	}
	rel.RowFilter, rel.ColumnList, rel.WholeRow, rel.KeyNote = st.rel.RowFilter, st.rel.ColumnList, st.rel.WholeRow, st.rel.KeyNote
	var added *decode.NewColumns
	evolve := func(t *icebergTable, changelog bool, closeFiles func() error) error {
		if !s.txOpen || s.skip(t) || s.tx.commitLSN < schemaLSN(t.tbl) {
			return nil // a replay from before the table's last schema change
		}
		if err := closeFiles(); err != nil {
			return err
		}
		// A copy that brought the mirror's schema in line left the
		// changelog a note on how to read this change (see alignForCopy).
		reset, pending := pendingReset(t)
		var res evolution.Resolution
		if changelog && pending {
			res = reset.resolution()
		}
		updates, err := t.evolve(ctx, rel, changelog, s.tx.commitLSN, s.typeChangePolicy(rel.QualifiedName()), res)
		if err != nil {
			return err
		}
		if changelog && pending && len(updates) > 0 {
			if err := s.settleReset(ctx, t, reset); err != nil {
				return err
			}
		}
		for _, u := range updates {
			s.log.Info("schema evolved", "table", t.name(), "change", u.String(), "schema_id", t.tbl.Schema().ID)
		}
		if !changelog && len(updates) > 0 {
			nc := newColumns(updates, rel.WholeRow)
			added = &nc
		}
		return nil
	}
	if m := st.mirror; m != nil {
		if err := evolve(m.icebergTable, false, m.closeFiles); err != nil {
			return nil, err
		}
		if err := m.rebind(rel); err != nil {
			return nil, err
		}
	}
	if c := st.changelog; c != nil {
		if err := evolve(c.icebergTable, true, c.closeFiles); err != nil {
			return nil, err
		}
		if err := c.rebind(rel); err != nil {
			return nil, err
		}
	}
	st.rel = rel
	return added, nil
}

// describeColumns completes a relation message's columns: pgoutput does
// not send NOT NULL or type names, and with REPLICA IDENTITY FULL it flags
// every column as key, so the catalog's view is kept, whose key is the
// primary key the mirror is indexed by. A column added or retyped is
// described as preflight describes columns (Config.Columns), so that types
// beyond the built-in ones and the rules apply to it.
func (s *Sink) describeColumns(ctx context.Context, st *sourceTable, rel *decode.Relation) error {
	for i := range rel.Columns {
		c := &rel.Columns[i]
		c.Key = false
		if j := st.rel.ColumnIndex(c.Name); j >= 0 {
			old := st.rel.Columns[j]
			c.NotNull, c.Key = old.NotNull, old.Key
			if c.TypeOID == old.TypeOID && c.TypeMod == old.TypeMod {
				c.TypeName, c.Type, c.Rule = old.TypeName, old.Type, old.Rule
				continue
			}
		}
		if s.cfg.Columns != nil {
			if err := s.cfg.Columns.DescribeColumn(ctx, rel, c); err != nil {
				return err
			}
		}
	}
	return nil
}
