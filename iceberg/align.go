package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/evolution"
)

// PropSchemaReset is the changelog table property a copy that brought its
// mirror's schema in line with the source sets (JSON schemaReset): how
// the changelog is to read the same change when the stream reaches its
// relation message. The changelog is not changed at the copy: the changes
// the stream replays from before that point still have the old columns.
const PropSchemaReset = "pg2iceberg.schema-reset"

// schemaReset is PropSchemaReset: the renames the catalog proved, the
// columns dropped or added for good, and the columns the source had.
type schemaReset struct {
	Renames map[string]string `json:"renames,omitempty"`
	Replace []string          `json:"replace,omitempty"`
	Columns []string          `json:"columns"`
}

func (r schemaReset) resolution() evolution.Resolution {
	res := evolution.Resolution{Renames: r.Renames, Replace: map[string]bool{}}
	for _, n := range r.Replace {
		res.Replace[n] = true
	}
	return res
}

// pendingReset returns a changelog's PropSchemaReset, if any.
func pendingReset(t *icebergTable) (schemaReset, bool) {
	var r schemaReset
	v, ok := t.tbl.Properties()[PropSchemaReset]
	if !ok || json.Unmarshal([]byte(v), &r) != nil {
		return r, false
	}
	return r, true
}

// typeChangePolicy is the table's type_change policy.
func (s *Sink) typeChangePolicy(table string) evolution.Policy {
	if s.cfg.Rules.Policies(table).TypeChange == "new-column" {
		return evolution.NewColumn
	}
	return evolution.Fail
}

// provenRenames returns the renames two attnum maps prove: a column whose
// attnum is in both under another name. PostgreSQL never reuses an attnum
// within a table, so the same attnum is the same column.
func provenRenames(recorded, current map[int]string) map[string]string {
	out := map[string]string{}
	for n, was := range recorded {
		if now, ok := current[n]; ok && now != was {
			out[was] = now
		}
	}
	return out
}

// RenamedSince returns the renames of relID's columns that the attnums
// recorded with its Iceberg tables and current (the catalog's now) prove
// and that its Iceberg schema has not followed: the old name is a column
// there and the new one is not. Without the DDL capture the stream cannot
// follow them (a relation message shows a drop and an add).
func (s *Sink) RenamedSince(relID uint32, current map[int]string) map[string]string {
	st, ok := s.tables[relID]
	if !ok {
		return nil
	}
	t := mirrorTable(st.mirror)
	changelog := t == nil
	if changelog {
		t = changelogTable(st.changelog)
	}
	if t == nil {
		return nil
	}
	cols, err := t.columns(changelog)
	if err != nil {
		return nil
	}
	has := map[string]bool{}
	for _, c := range cols {
		has[c.Name] = true
	}
	out := map[string]string{}
	for from, to := range provenRenames(attNumsOf(t.tbl), current) {
		if has[from] && !has[to] {
			out[from] = to
		}
	}
	return out
}

// alignForCopy brings the Iceberg schemas of st in line with rel, the
// table as a copy taken at lsn reads it (attnums: its columns by attnum in
// that snapshot), before the copy writes a row: a copy bound to an older
// schema would write NULL for a renamed or added column and leave the new
// values out. The mirror's schema is evolved now, by field ID: a rename
// the recorded attnums prove keeps its field (and so its history), every
// other difference is a drop and an add (the old column's values stay in
// the snapshots before the copy). The changelog is left as it is, and
// PropSchemaReset tells it to read the same change that way when the
// stream reaches it. changed reports whether the mirror's schema changed.
func (s *Sink) alignForCopy(ctx context.Context, st *sourceTable, rel *decode.Relation, attnums map[int]string, lsn decode.LSN) (changed bool, err error) {
	policy := s.typeChangePolicy(rel.QualifiedName())
	recorded := attNumsOf(mirrorTableOr(st).tbl)
	renames := provenRenames(recorded, attnums)
	if m := st.mirror; m != nil {
		if err := m.closeFiles(); err != nil {
			return false, err
		}
		updates, err := m.evolve(ctx, rel, false, lsn, policy, evolution.Resolution{Renames: renames, All: true})
		if err != nil {
			return false, fmt.Errorf("bring the schema of %s in line with the source before copying it: %w", m.name(), err)
		}
		for _, u := range updates {
			s.log.Info("schema aligned for the copy", "table", m.name(), "change", u.String(), "schema_id", m.tbl.Schema().ID)
		}
		changed = len(updates) > 0
	}
	if c := st.changelog; c != nil {
		if err := s.markReset(ctx, c.icebergTable, rel, renames, policy); err != nil {
			return changed, err
		}
	}
	for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
		if t != nil && len(attnums) > 0 && !maps.Equal(attNumsOf(t.tbl), attnums) {
			if err := t.setProperties(ctx, "record attnums of", icego.Properties{PropAttNums: attNumsProp(attnums)}); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// mirrorTableOr returns st's mirror table, or its changelog table when it
// has no mirror.
func mirrorTableOr(st *sourceTable) *icebergTable {
	if t := mirrorTable(st.mirror); t != nil {
		return t
	}
	return changelogTable(st.changelog)
}

// markReset records on a changelog how its columns become rel's (see
// PropSchemaReset), or removes a record nothing is left to do for.
func (s *Sink) markReset(ctx context.Context, t *icebergTable, rel *decode.Relation, renames map[string]string, policy evolution.Policy) error {
	current, err := t.columns(true)
	if err != nil {
		return err
	}
	next, err := relColumns(rel)
	if err != nil {
		return err
	}
	next = included(next)
	for i := range next {
		next[i].Key = false
	}
	updates, err := evolution.Reconcile(rel.QualifiedName(), current, next, policy, evolution.Resolution{Renames: renames, All: true})
	if err != nil {
		return fmt.Errorf("bring the schema of %s in line with the source: %w", t.name(), err)
	}
	if len(updates) == 0 {
		if _, ok := t.tbl.Properties()[PropSchemaReset]; !ok {
			return nil
		}
		return t.removeProperties(ctx, "clear the schema reset of", PropSchemaReset)
	}
	r := schemaReset{Renames: map[string]string{}}
	for _, u := range updates {
		switch u.Kind {
		case evolution.Rename:
			r.Renames[u.Name] = u.As
		case evolution.Drop, evolution.Add:
			r.Replace = append(r.Replace, u.Name)
		}
	}
	for _, c := range next {
		r.Columns = append(r.Columns, c.Name)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.log.Info("changelog follows the copy's schema when the stream reaches the change", "table", t.name(), "renames", r.Renames, "dropped_or_added", r.Replace)
	return t.setProperties(ctx, "record the schema reset of", icego.Properties{PropSchemaReset: string(b)})
}

// settleReset removes a changelog's PropSchemaReset once its columns are
// those the reset led to.
func (s *Sink) settleReset(ctx context.Context, t *icebergTable, r schemaReset) error {
	cols, err := t.columns(true)
	if err != nil {
		return err
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	want := slices.Clone(r.Columns)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		return nil
	}
	return t.removeProperties(ctx, "clear the schema reset of", PropSchemaReset)
}

// removeProperties removes table properties in a commit of their own.
func (t *icebergTable) removeProperties(ctx context.Context, what string, keys ...string) error {
	txn := t.tbl.NewTransaction()
	if err := txn.RemoveProperties(keys); err != nil {
		return fmt.Errorf("%s %s: %w", what, t.name(), err)
	}
	return t.commitTxn(ctx, txn, what, nil)
}

// AlignKeyless brings the changelog of a table without a mirror in line
// with the source (attnums: its columns by attnum now) as a copy would,
// for backfill --table of a keyless table: there are no rows to copy, but
// a rename the stream could not follow (no DDL capture) is a dead end
// without it. It reports whether anything was left to bring in line.
func (s *Sink) AlignKeyless(ctx context.Context, rel *decode.Relation, attnums map[int]string) (bool, error) {
	st, ok := s.tables[rel.ID]
	if !ok || st.mirror != nil || st.changelog == nil {
		return false, fmt.Errorf("table %s: only a table with a changelog and no mirror has its schema aligned without a copy", rel.QualifiedName())
	}
	t := st.changelog.icebergTable
	_, before := pendingReset(t)
	recorded := attNumsOf(t.tbl)
	if _, err := s.alignForCopy(ctx, st, rel, attnums, 0); err != nil {
		return false, err
	}
	_, after := pendingReset(t)
	return before != after || after || !maps.Equal(recorded, attnums), nil
}

// FollowKeyRenames renames, before the table is opened, the fields of
// rel's mirror whose key columns the recorded attnums prove renamed
// (attnums: the source's columns by attnum now), for backfill --table: a
// mirror is bound to its key columns by name, so one whose key column was
// renamed while the bridge was stopped cannot be opened to be copied. The
// copy brings the rest of the schema in line (see alignForCopy).
func (s *Sink) FollowKeyRenames(ctx context.Context, rel *decode.Relation, attnums map[int]string) error {
	mid, _ := Identifiers(rel.Schema, rel.Name)
	tbl, err := s.cat.LoadTable(ctx, mid)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load table %s: %w", strings.Join(mid, "."), err)
	}
	renames := map[string]string{}
	for from, to := range provenRenames(attNumsOf(tbl), attnums) {
		_, has := tbl.Schema().FindFieldByName(from)
		_, taken := tbl.Schema().FindFieldByName(to)
		if j := rel.ColumnIndex(to); j >= 0 && rel.Columns[j].Key && has && !taken {
			renames[from] = to
		}
	}
	if len(renames) == 0 {
		return nil
	}
	t, err := openTable(ctx, s.cat, mid, nil, nil, "", nil)
	if err != nil {
		return err
	}
	txn := t.tbl.NewTransaction()
	us := txn.UpdateSchema(true, false)
	for from, to := range renames {
		us = us.RenameColumn([]string{from}, to)
	}
	if err := us.Commit(); err != nil {
		return fmt.Errorf("rename key columns of %s: %w", t.name(), err)
	}
	if err := t.commitTxn(ctx, txn, "rename key columns of", nil); err != nil {
		return err
	}
	s.log.Info("key columns renamed before the copy", "table", t.name(), "renames", renames)
	return nil
}
