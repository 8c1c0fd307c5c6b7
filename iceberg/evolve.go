package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/evolution"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// PropSchemaLSN is the commit LSN of the source transaction whose relation
// last changed the table's schema. Transactions committed below it are
// replays from before that change: their (older) relations are written
// onto the newer schema by column name instead of evolving it back.
const PropSchemaLSN = "pg2iceberg.schema-lsn"

// relColumns maps a relation's columns to Iceberg types, index for index;
// a column a rule excludes has a nil Type.
func relColumns(rel *decode.Relation) ([]evolution.Column, error) {
	out := make([]evolution.Column, len(rel.Columns))
	for i, c := range rel.Columns {
		out[i] = evolution.Column{Name: c.Name, Key: c.Key}
		if c.Excluded() {
			continue
		}
		t, err := mapping.For(rel.QualifiedName(), c)
		if err != nil {
			return nil, err
		}
		out[i].Type = t
	}
	return out, nil
}

// included drops the columns a rule excludes.
func included(cols []evolution.Column) []evolution.Column {
	var out []evolution.Column
	for _, c := range cols {
		if c.Type != nil {
			out = append(out, c)
		}
	}
	return out
}

func fieldColumns(fields []icego.NestedField, sc *icego.Schema) []evolution.Column {
	ids := map[int]bool{}
	if sc != nil {
		for _, id := range sc.IdentifierFieldIDs {
			ids[id] = true
		}
	}
	out := make([]evolution.Column, len(fields))
	for i, f := range fields {
		out[i] = evolution.Column{Name: f.Name, Type: f.Type, Key: ids[f.ID]}
	}
	return out
}

// bindFields maps relation columns onto Arrow fields by name: idx[i] is the
// field of relation column i (-1: not in the table, the value is not
// written), and unbound lists the fields no column fills (written as NULL).
// A column's source type must equal or promote to its field's type; when
// one does not, the binding is still returned (that column unbound) with an
// *evolution.IncompatibleTypeError (see icebergTable.bindErr).
func bindFields(table string, rel *decode.Relation, fields []arrow.Field, iceFields []icego.NestedField) (idx, unbound []int, err error) {
	var incompatible *evolution.IncompatibleTypeError
	cols, err := relColumns(rel)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]int, len(fields))
	for j, f := range fields {
		byName[f.Name] = j
	}
	used := make([]bool, len(fields))
	idx = make([]int, len(cols))
	for i, c := range cols {
		j, ok := byName[c.Name]
		if c.Type == nil { // excluded by a rule
			idx[i] = -1
			continue
		}
		if !ok {
			if c.Key {
				return nil, nil, &MissingKeyError{Table: rel.QualifiedName(), Iceberg: table, Column: c.Name}
			}
			idx[i] = -1
			continue
		}
		if !evolution.Promotable(c.Type, iceFields[j].Type) {
			// A replay from before a retype under new-column: the old
			// values belong in the field the old column was renamed to.
			if r, ok := retiredField(c, byName, iceFields, cols, used); ok {
				idx[i], used[r] = r, true
				continue
			}
			if incompatible == nil {
				incompatible = &evolution.IncompatibleTypeError{Table: table, Column: c.Name, From: iceFields[j].Type, To: c.Type}
			}
			idx[i] = -1
			continue
		}
		idx[i], used[j] = j, true
	}
	for j := range fields {
		if !used[j] {
			if iceFields[j].Required {
				return nil, nil, fmt.Errorf("%s: required column %s has no source column", table, fields[j].Name)
			}
			unbound = append(unbound, j)
		}
	}
	if incompatible != nil {
		return idx, unbound, incompatible
	}
	return idx, unbound, nil
}

// retiredField finds the field a retype under the new-column policy
// renamed column c's old field to (evolution.RetypedName: c__v2, c__v3,
// ...): the newest one c's type can be written to that no column of the
// relation has by its own name or has taken already.
func retiredField(c evolution.Column, byName map[string]int, iceFields []icego.NestedField, cols []evolution.Column, used []bool) (int, bool) {
	own := make(map[string]bool, len(cols))
	for _, o := range cols {
		own[o.Name] = true
	}
	found := -1
	if c.Key {
		return found, false
	}
	for n := 2; n < 100; n++ {
		name := fmt.Sprintf("%s__v%d", c.Name, n)
		j, ok := byName[name]
		if ok && !own[name] && !used[j] && evolution.Promotable(c.Type, iceFields[j].Type) {
			found = j
		}
	}
	return found, found >= 0
}

// MissingKeyError is a key column of source table Table that Iceberg
// table Iceberg lacks: renamed (without the DDL capture, while the bridge
// was stopped) or a new key since the table was last copied.
type MissingKeyError struct {
	Table, Iceberg, Column string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("%s: key column %s is not in Iceberg table %s, which is kept by its key: the column was renamed, or the key changed, since the table was last copied or streamed. %s",
		e.Table, e.Column, e.Iceberg, evolution.RecopyAdvice(e.Table))
}

// lenientBind keeps an incompatible column's error in t.bindErr instead of
// returning it. At start the catalog can be ahead of the stream (a type
// changed after the last commit): the stream's relation message evolves
// the schema before any row is written, and writing first is an error.
func (t *icebergTable) lenientBind(err error) error {
	var inc *evolution.IncompatibleTypeError
	if errors.As(err, &inc) {
		t.bindErr = err
		return nil
	}
	t.bindErr = nil
	return err
}

// schemaLSN reads a table's PropSchemaLSN (0 when unset).
func schemaLSN(tbl *table.Table) decode.LSN {
	v, err := strconv.ParseUint(tbl.Properties()[PropSchemaLSN], 10, 64)
	if err != nil {
		return 0
	}
	return decode.LSN(v)
}

// columns returns the table's source columns as the diff sees them: the
// mirror's top-level fields (its identifier fields as keys), or the fields
// of a changelog's after struct (no keys: keys are the mirror's business).
func (t *icebergTable) columns(changelog bool) ([]evolution.Column, error) {
	sc := t.tbl.Schema()
	if !changelog {
		return fieldColumns(sc.Fields(), sc), nil
	}
	f, ok := sc.FindFieldByName(colAfter)
	if !ok {
		return nil, fmt.Errorf("%s: changelog has no %q column", t.name(), colAfter)
	}
	return fieldColumns(f.Type.(*icego.StructType).FieldList, nil), nil
}

// evolve brings the table's schema to the relation's shape. changelog says
// the columns live in the before/after structs; res reads what names leave
// open (see evolution.Reconcile). It returns the updates applied (none
// when the schema already fits).
func (t *icebergTable) evolve(ctx context.Context, rel *decode.Relation, changelog bool, lsn decode.LSN, policy evolution.Policy, res evolution.Resolution) ([]evolution.Update, error) {
	current, err := t.columns(changelog)
	if err != nil {
		return nil, err
	}
	next, err := relColumns(rel)
	if err != nil {
		return nil, err
	}
	if changelog {
		for i := range next {
			next[i].Key = false
		}
	}
	updates, err := evolution.Reconcile(rel.QualifiedName(), current, included(next), policy, res)
	if err != nil || len(updates) == 0 {
		return nil, err
	}
	txn := t.tbl.NewTransaction()
	parents := [][]string{nil}
	if changelog {
		parents = [][]string{{colBefore}, {colAfter}}
	}
	us := txn.UpdateSchema(true, false)
	for _, u := range updates {
		for _, p := range parents {
			path := append(append([]string(nil), p...), u.Name)
			switch u.Kind {
			case evolution.Drop:
				us = us.DeleteColumn(path)
			case evolution.Rename:
				cu := table.ColumnUpdate{Name: icego.Optional[string]{Valid: true, Val: u.As}}
				if !mapping.SameType(u.From, u.Type) {
					cu.FieldType = icego.Optional[icego.Type]{Valid: true, Val: u.Type}
				}
				us = us.UpdateColumn(slices.Clone(path), cu)
			case evolution.Promote:
				us = us.UpdateColumn(path, table.ColumnUpdate{FieldType: icego.Optional[icego.Type]{Valid: true, Val: u.Type}})
			case evolution.Retype:
				// RenameColumn's op appends to its path's backing array
				// (iceberg-go 0.7): each call gets a slice of its own.
				us = us.RenameColumn(slices.Clone(path), u.As).AddColumn(slices.Clone(path), u.Type, "", false, nil)
			case evolution.Add:
				us = us.AddColumn(path, u.Type, "", false, nil)
			}
		}
	}
	if err := us.Commit(); err != nil {
		return nil, fmt.Errorf("evolve schema of %s: %w", t.name(), err)
	}
	props := icego.Properties{PropSchemaLSN: strconv.FormatUint(uint64(lsn), 10)}
	if !changelog {
		// An added column may have a default and a retyped one has
		// converted values, which no change event carries: the mirror may
		// need a copy (the caller decides, see Sink.Relation). Marking it
		// in the schema's own commit means a crash before that decision
		// copies the table again at the next start instead of leaving
		// its rows without those values.
		// A column dropped from a mirror kept by the whole row changed
		// every row's key: that mirror is copied again.
		nc := newColumns(updates, rel.WholeRow)
		switch {
		case len(nc.Dropped) > 0:
			props[PropRecopy] = fmt.Sprintf("added %v, retyped %v, dropped %v from a mirror kept by the whole row", nc.Added, nc.Retyped, nc.Dropped)
		case len(nc.Added)+len(nc.Retyped) > 0:
			props[PropRecopy] = checkMark(nc)
		}
	}
	if err := t.commitTxn(ctx, txn, "evolve schema of", props); err != nil {
		return nil, err
	}
	crashPoint("after-schema")
	return updates, nil
}

// newColumns sorts a mirror's schema updates into the columns whose
// existing rows may hold values no change event carries (see
// decode.NewColumns): added and retyped ones, and those dropped from a
// mirror kept by the whole row (every row's key changed).
func newColumns(updates []evolution.Update, wholeRow bool) decode.NewColumns {
	var nc decode.NewColumns
	for _, u := range updates {
		switch {
		case u.Kind == evolution.Add:
			nc.Added = append(nc.Added, u.Name)
		case u.Kind == evolution.Retype:
			nc.Retyped = append(nc.Retyped, u.Name)
		case u.Kind == evolution.Drop && wholeRow:
			nc.Dropped = append(nc.Dropped, u.Name)
		}
	}
	return nc
}

// appendCell decodes one value into b, applying the column's rule: with
// lossy: allow a numeric is rounded to the decimal's scale first; a
// timestamptz rule reads a timestamp as wall-clock time in its zone.
func appendCell(b array.Builder, c *decode.Column, text []byte) error {
	if c.Rule == nil {
		return mapping.Append(b, text)
	}
	if text != nil && c.Rule.LossyAllowed() {
		if d, ok := b.Type().(*arrow.Decimal128Type); ok {
			r, err := mapping.RoundDecimal(text, int(d.Scale))
			if err != nil {
				return err
			}
			text = r
		}
	}
	if loc := c.Rule.Location(); loc != nil {
		return mapping.AppendWallTime(b, text, loc)
	}
	return mapping.Append(b, text)
}

// appendTuple writes one row image: relation column i into builder(idx[i])
// (skipped when idx[i] < 0), NULL into every unbound field. An unchanged
// TOAST value still in the image is an error, never a NULL. A value in
// binary form (a binary COPY) is read by mapping.AppendBinary, which gives
// what its text form gives; only columns with the default mapping come in
// that form (mapping.BinaryReadable). On error it returns the index of the
// column that failed.
func appendTuple(builder func(int) array.Builder, idx, unbound []int, rel *decode.Relation, t decode.Tuple) (int, error) {
	for _, j := range unbound {
		builder(j).AppendNull()
	}
	for i, d := range t {
		if idx[i] < 0 {
			continue
		}
		var text []byte
		switch d.Kind {
		case decode.Text:
			text = d.Data
		case decode.Binary:
			c := &rel.Columns[i]
			if c.Rule != nil {
				return i, fmt.Errorf("a value in binary form for a column with a mapping rule")
			}
			if err := mapping.AppendBinary(builder(idx[i]), c.TypeOID, d.Data); err != nil {
				return i, err
			}
			continue
		case decode.Unchanged:
			return i, &UnchangedToastError{Table: rel.QualifiedName(), Column: rel.Columns[i].Name}
		}
		if err := appendCell(builder(idx[i]), &rel.Columns[i], text); err != nil {
			return i, err
		}
	}
	return 0, nil
}
