package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// PropAttNums maps the source table's column attnums to column names as of
// the Iceberg schema (JSON), so a captured DDL event tells a rename (same
// attnum, new name) from a drop and an add.
const PropAttNums = "pg2iceberg.attnums"

func attNumsOf(tbl *table.Table) map[int]string {
	var m map[int]string
	if v, ok := tbl.Properties()[PropAttNums]; ok {
		if json.Unmarshal([]byte(v), &m) != nil {
			return nil
		}
	}
	return m
}

func attNumsProp(m map[int]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// AddMirror makes the mirror of a table that had a changelog only and now
// has a key (rel, from the catalog). The caller copies the table into it.
func (s *Sink) AddMirror(ctx context.Context, rel *decode.Relation) error {
	st, ok := s.tables[rel.ID]
	if !ok || st.mirror != nil || !rel.HasKey() {
		return nil
	}
	m, err := s.openMirror(ctx, rel)
	if err != nil {
		return err
	}
	if err := m.rebuildIndex(ctx); err != nil {
		return err
	}
	st.mirror, st.rel, st.mirrorAdded = m, rel, true
	s.log.Info("mirror created", "table", rel.QualifiedName(), "key", keyNames(rel))
	return nil
}

// InitAttNums records a table's current attnums when none are recorded yet
// (first start, or the DDL capture installed since).
func (s *Sink) InitAttNums(ctx context.Context, relID uint32, attnums map[int]string) error {
	st, ok := s.tables[relID]
	if !ok {
		return nil
	}
	for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
		if t == nil || attNumsOf(t.tbl) != nil {
			continue
		}
		if err := t.setProperties(ctx, "record attnums of", icego.Properties{PropAttNums: attNumsProp(attnums)}); err != nil {
			return err
		}
	}
	return nil
}

// DDL applies a captured DDL event of the open transaction, authenticated
// by the stream (see replication.SetupSQL): renames first (by attnum), then
// adds, drops and promotions as a relation change would. The schema
// changes are committed at once, before any row change follows. It returns
// what Relation returns for the changes.
func (s *Sink) DDL(ctx context.Context, ev *decode.DDLEvent) (*decode.NewColumns, error) {
	s.SpecAbandon("DDL on a published table")
	st, ok := s.tables[ev.RelID]
	if !ok && s.txOpen && ev.Tag == "DROP TABLE" {
		// Maybe a table of ours dropped while the bridge was stopped (see
		// applyGoneDrops), applied when the transaction commits.
		s.droppedGone = append(s.droppedGone, *ev)
		return nil, nil
	}
	if !ok || !s.txOpen {
		return nil, nil // not a table of ours (or a new one: copied when it has changes)
	}
	if ev.Tag == "DROP TABLE" {
		// Applied when the transaction commits, after its changes.
		s.dropped = append(s.dropped, ev.RelID)
		return nil, nil
	}
	next := make(map[int]string, len(ev.Columns))
	for _, c := range ev.Columns {
		next[c.AttNum] = c.Name
	}
	published := map[string]bool{}
	for _, c := range st.rel.Columns {
		published[c.Name] = true
	}
	renames := map[string]string{} // old name → new name
	for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
		if t == nil || s.skip(t) || s.tx.commitLSN < schemaLSN(t.tbl) {
			continue
		}
		old := attNumsOf(t.tbl)
		for n, name := range next {
			if was, ok := old[n]; ok && was != name && published[was] {
				renames[was] = name
			}
		}
		if err := s.renameColumns(ctx, st, t, t == changelogTable(st.changelog), renames, next); err != nil {
			return nil, err
		}
	}
	for i, c := range st.rel.Columns {
		if to, ok := renames[c.Name]; ok {
			st.rel.Columns[i].Name = to
		}
	}
	// A key from an index (primary key or replica identity index), or the
	// whole row, that is not the mirror's: re-key. No key at all is left as
	// it is.
	keys, ok := ev.KeyNames()
	wholeRow := ok && len(keys) == 0 && ev.WholeRow != nil && *ev.WholeRow && s.wholeRowComparable(st.rel)
	if (len(keys) > 0 || wholeRow) && st.mirror == nil {
		// A table without a key has a changelog only. Its mirror is made
		// and the table copied after the commit (see Commit); a start
		// that finds the key does the same.
		s.log.Info("table has a key now (primary key, replica identity index or whole row): its mirror is created and the table copied after this transaction",
			"table", st.rel.QualifiedName(), "key", keyText(keys))
		s.keyGained = append(s.keyGained, ev.RelID)
	}
	if st.mirror != nil && (len(keys) > 0 && !slices.Equal(keys, keyNames(st.rel)) || wholeRow && !st.rel.WholeRow) {
		// Applied when the transaction commits: its rows up to then are
		// applied with the old key. nil: the whole row.
		s.keyChanges[ev.RelID] = keys
	}
	// Drops, retypes and adds apply now, as a relation message would. A new
	// column is published unless it is generated or the publication has a
	// column list for the table (then the first row change's relation
	// message says whether it is); without the generated flag (an older
	// trigger) new columns wait for that message too.
	rel := &decode.Relation{ID: ev.RelID, Schema: ev.Schema, Name: ev.Table, ReplicaIdentity: st.rel.ReplicaIdentity}
	for _, c := range ev.Columns {
		published := st.rel.ColumnIndex(c.Name) >= 0 || (c.Generated != nil && !*c.Generated && !st.rel.ColumnList)
		if published {
			rel.Columns = append(rel.Columns, decode.Column{Name: c.Name, TypeOID: c.TypeOID, TypeMod: c.TypeMod, NotNull: c.NotNull})
		}
	}
	return s.Relation(ctx, rel)
}

// renameColumns renames columns of one Iceberg table (the changelog's in
// both structs) and records the new attnums, in one commit.
func (s *Sink) renameColumns(ctx context.Context, st *sourceTable, t *icebergTable, changelog bool, renames map[string]string, attnums map[int]string) error {
	txn := t.tbl.NewTransaction()
	if len(renames) > 0 {
		closeFiles := st.mirror.closeFilesFunc()
		if changelog {
			closeFiles = st.changelog.closeFiles
		}
		if err := closeFiles(); err != nil {
			return err
		}
		us := txn.UpdateSchema(true, false)
		for from, to := range renames {
			if changelog {
				us = us.RenameColumn([]string{colBefore, from}, to).RenameColumn([]string{colAfter, from}, to)
			} else {
				us = us.RenameColumn([]string{from}, to)
			}
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("rename columns of %s: %w", t.name(), err)
		}
	}
	props := icego.Properties{PropAttNums: attNumsProp(attnums)}
	if len(renames) > 0 {
		props[PropSchemaLSN] = strconv.FormatUint(uint64(s.tx.commitLSN), 10)
	}
	if err := t.commitTxn(ctx, txn, "rename columns of", props); err != nil {
		return err
	}
	for from, to := range renames {
		s.log.Info("schema evolved", "table", t.name(), "change", "rename column "+from+" to "+to, "schema_id", t.tbl.Schema().ID)
	}
	return nil
}

// renameTable follows ALTER TABLE ... RENAME TO / SET SCHEMA: the mirror
// and the changelog are renamed in the catalog (their files stay where they
// are) and get PropSchemaLSN, so a replay of older relation messages does
// not rename them back.
func (s *Sink) renameTable(ctx context.Context, st *sourceTable, rel *decode.Relation) error {
	mid, cid := Identifiers(rel.Schema, rel.Name)
	pairs := []struct {
		t  *icebergTable
		to table.Identifier
	}{{mirrorTable(st.mirror), mid}, {changelogTable(st.changelog), cid}}
	for _, x := range pairs {
		if x.t == nil || !s.txOpen || s.tx.commitLSN < schemaLSN(x.t.tbl) || slices.Equal(x.t.ident, x.to) {
			continue
		}
		taken, err := s.nameTaken(ctx, x.to)
		if err != nil {
			return err
		}
		if taken {
			// Renaming onto it would fail (the stream would stop at this
			// change for good) or displace another table's data.
			s.log.Warn("source table renamed to a name whose Iceberg table is another table's: its Iceberg tables keep their names",
				"table", rel.QualifiedName(), "taken", strings.Join(x.to, "."), "kept", x.t.name(),
				"fix", "ALTER TABLE "+rel.QuotedName()+" RENAME TO <a name whose Iceberg tables are free>; until then its changes go to "+x.t.name())
			st.rel.Schema, st.rel.Name = rel.Schema, rel.Name
			return nil
		}
	}
	for _, x := range pairs {
		if x.t == nil || !s.txOpen || s.tx.commitLSN < schemaLSN(x.t.tbl) || slices.Equal(x.t.ident, x.to) {
			continue
		}
		from := x.t.name()
		if err := s.cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(x.to), nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return fmt.Errorf("rename %s: create namespace %v: %w", from, x.to[:len(x.to)-1], err)
		}
		tbl, err := s.cat.RenameTable(ctx, x.t.ident, x.to)
		if err != nil {
			return fmt.Errorf("rename %s to %s (the source table was renamed): %w", from, strings.Join(x.to, "."), err)
		}
		x.t.ident = x.to
		x.t.tbl = tbl
		if err := x.t.setProperties(ctx, "record the rename of", icego.Properties{PropSchemaLSN: strconv.FormatUint(uint64(s.tx.commitLSN), 10)}); err != nil {
			return err
		}
		s.log.Info("table renamed", "from", from, "to", x.t.name())
	}
	st.rel.Schema, st.rel.Name = rel.Schema, rel.Name
	s.publishStatus()
	return nil
}

// nameTaken reports whether the Iceberg table ident exists in the catalog
// or is another source table's (a renamed table keeps Iceberg names that
// are not its source name's).
func (s *Sink) nameTaken(ctx context.Context, ident table.Identifier) (bool, error) {
	if s.tableAt(ident) != nil {
		return true, nil
	}
	_, err := s.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err)
	}
	return true, nil
}

// PropDropped is the table property a kept table of a dropped source table
// gets: JSON {"lsn": commit LSN of the DROP, "at": its commit time}.
const PropDropped = "pg2iceberg.dropped"

// applyDrops follows the DROP TABLEs of the transaction just committed
// (after a flush, so the tables hold every change before the drop): by the
// table's drop_table policy, its Iceberg tables are kept and marked with
// PropDropped, or dropped. Either way the bridge forgets the table.
func (s *Sink) applyDrops(ctx context.Context) error {
	drops := s.dropped
	s.dropped = nil
	for _, id := range drops {
		st, ok := s.tables[id]
		if !ok {
			continue
		}
		policy := s.cfg.Rules.Policies(st.rel.QualifiedName()).DropTable
		for _, t := range []*icebergTable{mirrorTable(st.mirror), changelogTable(st.changelog)} {
			if t == nil {
				continue
			}
			if err := s.applyDropPolicy(ctx, t, policy, s.dropMark()); err != nil {
				return err
			}
		}
		delete(s.tables, id)
	}
	gone := s.droppedGone
	s.droppedGone = nil
	if err := s.applyGoneDrops(ctx, gone); err != nil {
		return err
	}
	s.publishStatus()
	return nil
}

// wholeRowComparable reports whether every column of rel can be part of a
// whole-row key (see mapping.WholeRowProblem).
func (s *Sink) wholeRowComparable(rel *decode.Relation) bool {
	for _, c := range rel.Columns {
		if why := mapping.WholeRowProblem(rel.QualifiedName(), c); why != "" {
			s.log.Warn("table cannot be kept by the whole row: its mirror keeps its key", "table", rel.QualifiedName(), "reason", why)
			return false
		}
	}
	return true
}

// applyKeyChanges re-keys the mirrors whose key the committed transaction
// changed (after a flush, see changeKey); a nil key is the whole row.
func (s *Sink) applyKeyChanges(ctx context.Context) error {
	changes := s.keyChanges
	s.keyChanges = make(map[uint32][]string)
	for id, keys := range changes {
		st, ok := s.tables[id]
		if !ok || st.mirror == nil || s.tx.commitLSN < schemaLSN(st.mirror.tbl) {
			continue
		}
		rel := *st.rel
		rel.Columns = slices.Clone(st.rel.Columns)
		for i := range rel.Columns {
			rel.Columns[i].Key = slices.Contains(keys, rel.Columns[i].Name)
		}
		rel.WholeRow, rel.KeyNote = keys == nil, ""
		if err := s.changeKey(ctx, st.mirror, &rel, s.tx.commitLSN); err != nil {
			return err
		}
		st.rel = &rel
	}
	return nil
}
