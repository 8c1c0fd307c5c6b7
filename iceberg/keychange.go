package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// keyNames returns the names of a relation's key columns, in column order.
func keyNames(rel *decode.Relation) []string {
	var out []string
	for _, c := range rel.Columns {
		if c.Key {
			out = append(out, c.Name)
		}
	}
	return out
}

// identifierNames returns a schema's identifier fields' names, sorted.
func identifierNames(sc *icego.Schema) []string {
	var out []string
	for _, id := range sc.IdentifierFieldIDs {
		if f, ok := sc.FindFieldByID(id); ok {
			out = append(out, f.Name)
		}
	}
	slices.Sort(out)
	return out
}

// sameKey reports whether the mirror is keyed by rel's key columns. A
// mirror kept by the whole row has no identifier fields (its rows may
// repeat); one written before it was kept so has every column as one, and
// is re-keyed.
func sameKey(m *mirror, rel *decode.Relation) bool {
	want := keyNames(rel)
	slices.Sort(want)
	return slices.Equal(identifierNames(m.tbl.Schema()), want)
}

// keyText names a key for the log: its columns, or "whole row" for none.
func keyText(names []string) string {
	if len(names) == 0 {
		return "whole row"
	}
	return strings.Join(names, ",")
}

// changeKey re-keys a mirror on rel's key columns (a primary key or replica
// identity change): the identifier fields become those columns (required;
// columns that leave the key become optional; none for a whole-row key),
// the writers rebind, and the key index is rebuilt from the table. The
// mirror must have nothing pending: callers flush first.
func (s *Sink) changeKey(ctx context.Context, m *mirror, rel *decode.Relation, lsn decode.LSN) error {
	from := identifierNames(m.tbl.Schema())
	to := keyNames(rel)
	if len(to) == 0 && !rel.WholeRow {
		return fmt.Errorf("%s: the table has no primary key or replica identity any more, so its mirror cannot be kept by key: add a primary key, or run ALTER TABLE %s REPLICA IDENTITY FULL", m.name(), rel.QualifiedName())
	}
	txn := m.tbl.NewTransaction()
	// Making a column required is not a compatible change in general; here
	// PostgreSQL guarantees the key columns hold no NULL.
	us := txn.UpdateSchema(true, true)
	sc := m.tbl.Schema()
	var paths [][]string
	for _, name := range to {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			return fmt.Errorf("%s: new key column %s is not in the table", m.name(), name)
		}
		if !f.Required {
			us = us.UpdateColumn([]string{name}, table.ColumnUpdate{Required: icego.Optional[bool]{Valid: true, Val: true}})
		}
		paths = append(paths, []string{name})
	}
	for _, name := range from {
		if !slices.Contains(to, name) {
			us = us.UpdateColumn([]string{name}, table.ColumnUpdate{Required: icego.Optional[bool]{Valid: true, Val: false}})
		}
	}
	us = us.SetIdentifierField(paths)
	if err := us.Commit(); err != nil {
		return fmt.Errorf("change the key of %s: %w", m.name(), err)
	}
	if err := m.commitTxn(ctx, txn, "change the key of", icego.Properties{PropSchemaLSN: strconv.FormatUint(uint64(lsn), 10)}); err != nil {
		return err
	}
	m.rel = rel
	if err := m.bind(); err != nil {
		return err
	}
	start := time.Now()
	if err := m.rebuildIndex(ctx); err != nil {
		return err
	}
	s.log.Info("key changed: key index rebuilt", "table", m.name(), "from", keyText(from), "to", keyText(to),
		"rows", m.index.Len(), "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}
