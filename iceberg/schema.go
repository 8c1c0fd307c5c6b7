package iceberg

import (
	"fmt"

	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// ChangelogSuffix names a source table's changelog: schema.table__changelog.
const ChangelogSuffix = "__changelog"

// Changelog column names.
const (
	colOp       = "op"
	colLSN      = "lsn"
	colXID      = "xid"
	colCommitTS = "commit_ts"
	colSeq      = "seq"
	colBefore   = "before"
	colAfter    = "after"
	// colUnavailable names the columns of after whose values are not
	// known (see Sink.resolveAfter); NULL when every value is.
	colUnavailable = "unavailable"
)

// unavailableField is the changelog's colUnavailable column (its IDs are
// assigned when the schema is built or the column added).
func unavailableField() icego.NestedField {
	return icego.NestedField{Name: colUnavailable, Type: &icego.ListType{Element: icego.PrimitiveTypes.String, ElementRequired: true},
		Doc: "columns of after whose values the source did not send (an unchanged TOAST value) and the bridge could not know; NULL in after"}
}

// columnType is the Iceberg type of a relation column.
func columnType(rel *decode.Relation, c decode.Column) (icego.Type, error) {
	return mapping.For(rel.QualifiedName(), c)
}

// rowFields maps the relation's columns to Iceberg fields. Key columns are
// required (identifier fields must be). IDs are assigned by assignIDs.
func rowFields(rel *decode.Relation, keysRequired bool) ([]icego.NestedField, error) {
	fields := make([]icego.NestedField, 0, len(rel.Columns))
	for _, c := range rel.Columns {
		if c.Excluded() {
			continue
		}
		t, err := columnType(rel, c)
		if err != nil {
			return nil, err
		}
		fields = append(fields, icego.NestedField{
			Name:     c.Name,
			Type:     t,
			Required: keysRequired && c.Key,
		})
	}
	return fields, nil
}

// assignIDs gives every field a unique ID from *next, depth first: a
// field, then the fields inside its type (list element, map key and value,
// struct fields), then the next field. That is the order iceberg-go
// assigns fresh IDs in when a table is created, so the schema built here
// is the table's schema, IDs included.
func assignIDs(fields []icego.NestedField, next *int) []icego.NestedField {
	out := make([]icego.NestedField, len(fields))
	for i, f := range fields {
		f.ID = *next
		*next++
		f.Type = typeWithIDs(f.Type, next)
		out[i] = f
	}
	return out
}

func typeWithIDs(t icego.Type, next *int) icego.Type {
	switch t := t.(type) {
	case *icego.StructType:
		return &icego.StructType{FieldList: assignIDs(t.FieldList, next)}
	case *icego.ListType:
		l := *t
		l.ElementID = *next
		*next++
		l.Element = typeWithIDs(t.Element, next)
		return &l
	case *icego.MapType:
		m := *t
		m.KeyID = *next
		m.ValueID = *next + 1
		*next += 2
		m.KeyType = typeWithIDs(t.KeyType, next)
		m.ValueType = typeWithIDs(t.ValueType, next)
		return &m
	}
	return t
}

// MirrorSchema is the Iceberg schema of a source table's mirror: its columns,
// with the replica identity columns as identifier fields.
func MirrorSchema(rel *decode.Relation) (*icego.Schema, error) {
	fields, err := rowFields(rel, true)
	if err != nil {
		return nil, err
	}
	next := 1
	fields = assignIDs(fields, &next)
	var ids []int
	for _, f := range fields {
		if i := rel.ColumnIndex(f.Name); i >= 0 && rel.Columns[i].Key {
			ids = append(ids, f.ID)
		}
	}
	return icego.NewSchemaWithIdentifiers(0, ids, fields...), nil
}

// ChangelogSchema is the schema of a source table's changelog.
func ChangelogSchema(rel *decode.Relation) (*icego.Schema, error) {
	before, err := rowFields(rel, false)
	if err != nil {
		return nil, err
	}
	after, err := rowFields(rel, false)
	if err != nil {
		return nil, err
	}
	next := 1
	fields := assignIDs([]icego.NestedField{
		{Name: colOp, Type: icego.PrimitiveTypes.String, Required: true, Doc: "I, U, D or T"},
		{Name: colLSN, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "commit LSN of the source transaction"},
		{Name: colXID, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "source transaction id"},
		{Name: colCommitTS, Type: icego.PrimitiveTypes.TimestampTz, Required: true},
		{Name: colSeq, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "position of the change in its transaction"},
		{Name: colBefore, Type: &icego.StructType{FieldList: before}},
		{Name: colAfter, Type: &icego.StructType{FieldList: after}},
		unavailableField(),
	}, &next)
	return icego.NewSchema(0, fields...), nil
}

// DefaultChangelogPartition is a changelog's partition spec when the
// configuration names none, in changelog_partition's syntax.
const DefaultChangelogPartition = "day(commit_ts)"

// ChangelogSpec partitions a changelog by day of commit_ts.
func ChangelogSpec(sc *icego.Schema) icego.PartitionSpec {
	f, _ := sc.FindFieldByName(colCommitTS)
	return icego.NewPartitionSpec(icego.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: "commit_ts_day", Transform: icego.DayTransform{}})
}

// checkSameColumns fails when the table's schema and the relation disagree:
// schema evolution is not applied yet, and writing rows under the wrong
// schema would be silently wrong.
func checkSameColumns(table string, sc *icego.Schema, rel *decode.Relation, changelog bool) error {
	want := rel.Columns
	var got []icego.NestedField
	if changelog {
		f, ok := sc.FindFieldByName(colAfter)
		if !ok {
			return fmt.Errorf("%s: changelog has no %q column", table, colAfter)
		}
		st, ok := f.Type.(*icego.StructType)
		if !ok {
			return fmt.Errorf("%s: changelog column %q is not a struct", table, colAfter)
		}
		got = st.FieldList
	} else {
		got = sc.Fields()
	}
	if len(got) != len(want) {
		return &SchemaMismatchError{Table: table, Reason: fmt.Sprintf("Iceberg table has %d columns, source has %d", len(got), len(want))}
	}
	for i, c := range want {
		if got[i].Name != c.Name {
			return &SchemaMismatchError{Table: table, Reason: fmt.Sprintf("column %d is %s in Iceberg, %s at the source", i+1, got[i].Name, c.Name)}
		}
		if c.Type == nil && mapping.Builtin(c.TypeOID, c.TypeMod) == nil {
			// A relation from the stream without the catalog's description
			// of a type created in the database (enum, domain, composite,
			// extension type): there is nothing to compare the table's type
			// with here, and mapping.Append still checks every value
			// against it.
			continue
		}
		t, err := columnType(rel, c)
		if err != nil {
			return err
		}
		same := mapping.SameType(got[i].Type, t)
		if !same && c.Type == nil {
			// Without the catalog's description an array counts as
			// one-dimensional; the table knows its declared dimensions.
			same = mapping.SameType(flattenLists(got[i].Type), t)
		}
		if !same {
			return &SchemaMismatchError{Table: table, Reason: fmt.Sprintf("column %d is %s %s in Iceberg, %s %s at the source", i+1, got[i].Name, got[i].Type, c.Name, t)}
		}
	}
	return nil
}

// flattenLists turns list<list<...<t>>> into list<t>.
func flattenLists(t icego.Type) icego.Type {
	l, ok := t.(*icego.ListType)
	if !ok {
		return t
	}
	for {
		inner, ok := l.Element.(*icego.ListType)
		if !ok {
			return l
		}
		l = inner
	}
}

// SchemaMismatchError reports a source table whose columns differ from its
// Iceberg table's: a schema change that is not propagated yet.
type SchemaMismatchError struct{ Table, Reason string }

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("%s: source schema differs from the Iceberg table (%s); schema evolution is not supported yet: stop the bridge, or drop the Iceberg table and let it be copied again", e.Table, e.Reason)
}
