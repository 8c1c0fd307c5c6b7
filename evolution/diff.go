package evolution

import (
	"fmt"
	"slices"
	"strconv"
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
	// Rename gives the current column Name the name As (and the type Type
	// when it is a promotion of From); the field keeps its ID.
	Rename
	Promote
	// Retype keeps the old field under the name As and adds a new field of
	// the new type under the column's name (the new-column policy).
	Retype
	Add
)

func (k Kind) String() string {
	return [...]string{"drop column", "rename column", "promote type", "new column for type change", "add column"}[k]
}

// Update is one schema update.
type Update struct {
	Kind Kind
	Name string
	// Type is the new type (Add, Promote, Retype); From the old one
	// (Promote, Drop, Retype).
	Type, From icego.Type
	// As is the name the old field takes (Retype, Rename).
	As string
}

func (u Update) String() string {
	switch u.Kind {
	case Add:
		return fmt.Sprintf("add column %s %s", u.Name, u.Type)
	case Promote:
		return fmt.Sprintf("promote %s from %s to %s", u.Name, u.From, u.Type)
	case Retype:
		return fmt.Sprintf("keep %s %s as %s, add %s %s", u.Name, u.From, u.As, u.Name, u.Type)
	case Rename:
		if !mapping.SameType(u.From, u.Type) {
			return fmt.Sprintf("rename column %s to %s, promote from %s to %s", u.Name, u.As, u.From, u.Type)
		}
		return fmt.Sprintf("rename column %s to %s", u.Name, u.As)
	}
	return fmt.Sprintf("drop column %s", u.Name)
}

// Policy is what Diff does with a type change Iceberg cannot promote.
type Policy int

const (
	// Fail returns an IncompatibleTypeError (the default).
	Fail Policy = iota
	// NewColumn keeps the old field under a suffixed name (see RetypedName)
	// and adds a new field under the column's name.
	NewColumn
)

// RetypedName is the name the old field of a column retyped under the
// new-column policy takes: name__v2, or the first of __v3, __v4, ... that
// no column has.
func RetypedName(name string, taken func(string) bool) string {
	for n := 2; ; n++ {
		if as := fmt.Sprintf("%s__v%d", name, n); !taken(as) {
			return as
		}
	}
}

// IncompatibleTypeError is a type change Iceberg cannot apply as a
// promotion.
type IncompatibleTypeError struct {
	Table, Column string
	From, To      icego.Type
}

func (e *IncompatibleTypeError) Error() string {
	return fmt.Sprintf("%s: column %s changed type from %s to %s, which Iceberg cannot promote (it allows int to long, float to double, and widening a decimal's precision); nothing was written for this change. Options: revert the type change; or add to the --config file\n  tables:\n    - table: %s\n      type_change: new-column\nand start the bridge again: the old field is kept as %s__v2 and a new field takes the name (the table is copied again for the new values)", e.Table, e.Column, e.From, e.To, e.Table, e.Column)
}

// AmbiguousChangeError is a relation that lost some columns and gained
// others at once: maybe renames, maybe drops and adds.
type AmbiguousChangeError struct {
	Table          string
	Dropped, Added []string
}

func (e *AmbiguousChangeError) Error() string {
	return fmt.Sprintf("%[1]s: columns %[2]s disappeared and %[3]s appeared in one change; replication messages alone cannot tell a rename from a drop and an add, and guessing would misplace data, so nothing was written for this change. "+
		"To go on, copy the table again, which brings its Iceberg schema in line with the source: with the bridge stopped, run\n"+
		"  pg2iceberg backfill --table %[1]s\n"+
		"with the --source, --publication, --warehouse and --catalog of run, then start the bridge again. "+
		"A column the catalog proves renamed (the same attnum under a new name) keeps its Iceberg field and values; any other is dropped (its values stay in the snapshots before the copy) and the new one added. "+
		"Installing the DDL capture now (pg2iceberg setup) makes later renames exact, but not this one, which is in the WAL already without its event",
		e.Table, strings.Join(e.Dropped, ", "), strings.Join(e.Added, ", "))
}

// RecopyAdvice is the way out of a schema change the stream cannot follow
// for table: copy it again with backfill --table, which brings its Iceberg
// schema in line with the source by field ID and keeps its history.
func RecopyAdvice(table string) string {
	return "To go on, copy the table again, which brings its Iceberg schema in line with the source and keeps its history (a column the catalog proves renamed keeps its field; the snapshots before the copy stay): with the bridge stopped, run\n" +
		"  pg2iceberg backfill --table " + table + "\n" +
		"with the --source, --publication, --warehouse and --catalog of run, then start the bridge again. pg2iceberg setup installs the DDL capture, which makes later renames exact"
}

// KeyChangeError is a change to the key columns (dropped, added or retyped).
type KeyChangeError struct {
	Table, Column string
	Reason        string
}

func (e *KeyChangeError) Error() string {
	return fmt.Sprintf("%s: key column %s %s, and the stream cannot apply that to a mirror kept by the key, so nothing was written for this change (a key column renamed without the DDL capture shows as a drop and an add). %s",
		e.Table, e.Column, e.Reason, RecopyAdvice(e.Table))
}

// Resolution tells Reconcile how to read a change that the column names
// alone leave open.
type Resolution struct {
	// Renames maps a current column's name to its next name: the same
	// column (its attnum says so). A rename applies when the current
	// column is gone by its name, the next one is new, both agree on being
	// key columns, and the type is the same or a promotion; otherwise the
	// pair is a drop and an add like any other.
	Renames map[string]string
	// Replace names the columns (current or next) whose drop or add is
	// known to be one and not half of a rename, so they make no
	// AmbiguousChangeError, and whose type change Iceberg cannot promote is
	// a drop of the old field and an add of a new one under the same name.
	Replace map[string]bool
	// All counts every column as in Replace (a copy of the whole table,
	// which rewrites every value, brings the schema in line).
	All bool
}

func (r Resolution) replaces(name string) bool { return r.All || r.Replace[name] }

// Diff returns the updates that turn the current schema's columns into the
// source's next columns: drops first, then promotions, then retypes, then
// adds in source order. Column order changes are not updates (columns map by
// name). policy says what a type change Iceberg cannot promote does.
func Diff(table string, current, next []Column, policy Policy) ([]Update, error) {
	return Reconcile(table, current, next, policy, Resolution{})
}

// Reconcile is Diff with a Resolution for what names leave open: the
// renames it proves (ordered after the drops), and the columns it replaces
// dropped and added without an error.
func Reconcile(table string, current, next []Column, policy Policy, res Resolution) ([]Update, error) {
	nxt := make(map[string]Column, len(next))
	for _, c := range next {
		nxt[c.Name] = c
	}
	renames, current := renamesOf(current, nxt, res.Renames)
	cur := make(map[string]Column, len(current))
	for _, c := range current {
		cur[c.Name] = c
	}
	var drops, promotes, retypes, adds []Update
	var dropped, added []string // not known to be one (res), for AmbiguousChangeError
	for _, c := range current {
		if _, ok := nxt[c.Name]; ok || retired(c.Name, nxt) {
			continue
		}
		if c.Key {
			return nil, &KeyChangeError{Table: table, Column: c.Name, Reason: "was dropped"}
		}
		drops = append(drops, Update{Kind: Drop, Name: c.Name, From: c.Type})
		if !res.replaces(c.Name) {
			dropped = append(dropped, c.Name)
		}
	}
	for _, n := range next {
		c, ok := cur[n.Name]
		if !ok {
			if n.Key {
				return nil, &KeyChangeError{Table: table, Column: n.Name, Reason: "was added"}
			}
			adds = append(adds, Update{Kind: Add, Name: n.Name, Type: n.Type})
			if !res.replaces(n.Name) {
				added = append(added, n.Name)
			}
			continue
		}
		if mapping.SameType(c.Type, n.Type) {
			continue
		}
		if c.Key {
			return nil, &KeyChangeError{Table: table, Column: n.Name, Reason: fmt.Sprintf("changed type from %s to %s", c.Type, n.Type)}
		}
		if Promotable(c.Type, n.Type) {
			promotes = append(promotes, Update{Kind: Promote, Name: n.Name, From: c.Type, Type: n.Type})
			continue
		}
		switch {
		case policy == NewColumn:
			as := RetypedName(n.Name, func(name string) bool {
				_, inCur := cur[name]
				_, inNext := nxt[name]
				return inCur || inNext || slices.ContainsFunc(retypes, func(u Update) bool { return u.As == name })
			})
			retypes = append(retypes, Update{Kind: Retype, Name: n.Name, From: c.Type, Type: n.Type, As: as})
		case res.replaces(n.Name):
			drops = append(drops, Update{Kind: Drop, Name: n.Name, From: c.Type})
			adds = append(adds, Update{Kind: Add, Name: n.Name, Type: n.Type})
		default:
			return nil, &IncompatibleTypeError{Table: table, Column: n.Name, From: c.Type, To: n.Type}
		}
	}
	if len(dropped) > 0 && len(added) > 0 {
		return nil, &AmbiguousChangeError{Table: table, Dropped: dropped, Added: added}
	}
	return slices.Concat(drops, renames, promotes, retypes, adds), nil
}

// renamesOf returns the renames of want that apply (see
// Resolution.Renames) and the current columns under their next names.
func renamesOf(current []Column, nxt map[string]Column, want map[string]string) ([]Update, []Column) {
	if len(want) == 0 {
		return nil, current
	}
	names := make(map[string]bool, len(current))
	for _, c := range current {
		names[c.Name] = true
	}
	var out []Update
	renamed := slices.Clone(current)
	for i, c := range current {
		to, ok := want[c.Name]
		if !ok || to == c.Name || names[to] {
			continue
		}
		_, stays := nxt[c.Name]
		n, ok := nxt[to]
		if stays || !ok || n.Key != c.Key || !Promotable(c.Type, n.Type) {
			continue
		}
		out = append(out, Update{Kind: Rename, Name: c.Name, As: to, From: c.Type, Type: n.Type})
		renamed[i].Name, renamed[i].Type = to, n.Type
	}
	return out, renamed
}

// retired reports whether name is a field a retype under the new-column
// policy kept the old values in (RetypedName: <column>__v<n>, n >= 2) for
// a column the source still has. Such a field stays when the source's
// columns are compared again (a later relation message, a restart): it is
// not a dropped column.
func retired(name string, next map[string]Column) bool {
	i := strings.LastIndex(name, "__v")
	if i <= 0 {
		return false
	}
	n, err := strconv.Atoi(name[i+3:])
	if err != nil || n < 2 || strconv.Itoa(n) != name[i+3:] {
		return false
	}
	_, ok := next[name[:i]]
	return ok
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
