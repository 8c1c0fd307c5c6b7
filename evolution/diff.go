package evolution

import (
	"fmt"
	"slices"
	"strings"

	icego "github.com/apache/iceberg-go"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// Column is one column as the diff sees it.
type Column struct {
	Name string
	Type icego.Type
	Key  bool
}

// Kind is the kind of a schema update.
type Kind int

// Update kinds, applied in this order.
const (
	Drop Kind = iota
	Promote
	Add
)

func (k Kind) String() string {
	return [...]string{"drop column", "promote type", "add column"}[k]
}

// Update is one schema update.
type Update struct {
	Kind Kind
	Name string
	// Type is the new type (Add, Promote); From the old one (Promote, Drop).
	Type, From icego.Type
}

func (u Update) String() string {
	switch u.Kind {
	case Add:
		return fmt.Sprintf("add column %s %s", u.Name, u.Type)
	case Promote:
		return fmt.Sprintf("promote %s from %s to %s", u.Name, u.From, u.Type)
	}
	return fmt.Sprintf("drop column %s", u.Name)
}

// IncompatibleTypeError is a type change Iceberg cannot apply as a
// promotion.
type IncompatibleTypeError struct {
	Table, Column string
	From, To      icego.Type
}

func (e *IncompatibleTypeError) Error() string {
	return fmt.Sprintf("%s: column %s changed type from %s to %s, which Iceberg cannot promote (it allows int to long, float to double, and widening a decimal's precision); nothing was written for this change: revert the type change, or drop the Iceberg tables and copy the table again", e.Table, e.Column, e.From, e.To)
}

// AmbiguousChangeError is a relation that lost some columns and gained
// others at once: maybe renames, maybe drops and adds.
type AmbiguousChangeError struct {
	Table          string
	Dropped, Added []string
}

func (e *AmbiguousChangeError) Error() string {
	return fmt.Sprintf("%s: columns %s disappeared and %s appeared in one change; a rename cannot be told from a drop and an add by replication messages alone, and guessing would misplace data: change one column per transaction, or drop the Iceberg tables and copy the table again", e.Table, strings.Join(e.Dropped, ", "), strings.Join(e.Added, ", "))
}

// KeyChangeError is a change to the key columns (dropped, added or retyped).
type KeyChangeError struct {
	Table, Column string
	Reason        string
}

func (e *KeyChangeError) Error() string {
	return fmt.Sprintf("%s: key column %s %s; key changes are not applied yet: drop the Iceberg tables and copy the table again", e.Table, e.Column, e.Reason)
}

// Diff returns the updates that turn the current schema's columns into the
// source's next columns: drops first, then promotions, then adds in source
// order. Column order changes are not updates (columns map by name).
func Diff(table string, current, next []Column) ([]Update, error) {
	cur := make(map[string]Column, len(current))
	for _, c := range current {
		cur[c.Name] = c
	}
	nxt := make(map[string]Column, len(next))
	for _, c := range next {
		nxt[c.Name] = c
	}
	var drops, promotes, adds []Update
	var dropped, added []string
	for _, c := range current {
		if _, ok := nxt[c.Name]; ok {
			continue
		}
		if c.Key {
			return nil, &KeyChangeError{Table: table, Column: c.Name, Reason: "was dropped"}
		}
		drops = append(drops, Update{Kind: Drop, Name: c.Name, From: c.Type})
		dropped = append(dropped, c.Name)
	}
	for _, n := range next {
		c, ok := cur[n.Name]
		if !ok {
			if n.Key {
				return nil, &KeyChangeError{Table: table, Column: n.Name, Reason: "was added"}
			}
			adds = append(adds, Update{Kind: Add, Name: n.Name, Type: n.Type})
			added = append(added, n.Name)
			continue
		}
		if mapping.SameType(c.Type, n.Type) {
			continue
		}
		if !Promotable(c.Type, n.Type) {
			return nil, &IncompatibleTypeError{Table: table, Column: n.Name, From: c.Type, To: n.Type}
		}
		if c.Key {
			return nil, &KeyChangeError{Table: table, Column: n.Name, Reason: fmt.Sprintf("changed type from %s to %s", c.Type, n.Type)}
		}
		promotes = append(promotes, Update{Kind: Promote, Name: n.Name, From: c.Type, Type: n.Type})
	}
	if len(dropped) > 0 && len(added) > 0 {
		return nil, &AmbiguousChangeError{Table: table, Dropped: dropped, Added: added}
	}
	return slices.Concat(drops, promotes, adds), nil
}

// Promotable reports whether Iceberg can change a column from one type to
// another in place (the spec's allowed promotions).
func Promotable(from, to icego.Type) bool {
	if mapping.SameType(from, to) {
		return true
	}
	switch f := from.(type) {
	case icego.Int32Type:
		_, ok := to.(icego.Int64Type)
		return ok
	case icego.Float32Type:
		_, ok := to.(icego.Float64Type)
		return ok
	case icego.DecimalType:
		t, ok := to.(icego.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	}
	return false
}
