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
)

// rowFields maps the relation's columns to Iceberg fields, assigning IDs
// from *next. Key columns are required (identifier fields must be).
func rowFields(rel *decode.Relation, next *int, keysRequired bool) ([]icego.NestedField, error) {
	fields := make([]icego.NestedField, 0, len(rel.Columns))
	for _, c := range rel.Columns {
		t, err := mapping.For(rel.QualifiedName(), mapping.Column{Name: c.Name, TypeOID: c.TypeOID, TypeMod: c.TypeMod, TypeName: c.TypeName})
		if err != nil {
			return nil, err
		}
		fields = append(fields, icego.NestedField{
			ID:       *next,
			Name:     c.Name,
			Type:     t,
			Required: keysRequired && c.Key,
		})
		*next++
	}
	return fields, nil
}

// MirrorSchema is the Iceberg schema of a source table's mirror: its columns,
// with the replica identity columns as identifier fields.
func MirrorSchema(rel *decode.Relation) (*icego.Schema, error) {
	next := 1
	fields, err := rowFields(rel, &next, true)
	if err != nil {
		return nil, err
	}
	var ids []int
	for i, c := range rel.Columns {
		if c.Key {
			ids = append(ids, fields[i].ID)
		}
	}
	return icego.NewSchemaWithIdentifiers(0, ids, fields...), nil
}

// ChangelogSchema is the schema of a source table's changelog.
func ChangelogSchema(rel *decode.Relation) (*icego.Schema, error) {
	next := 8
	before, err := rowFields(rel, &next, false)
	if err != nil {
		return nil, err
	}
	after, err := rowFields(rel, &next, false)
	if err != nil {
		return nil, err
	}
	return icego.NewSchema(0,
		icego.NestedField{ID: 1, Name: colOp, Type: icego.PrimitiveTypes.String, Required: true, Doc: "I, U, D or T"},
		icego.NestedField{ID: 2, Name: colLSN, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "commit LSN of the source transaction"},
		icego.NestedField{ID: 3, Name: colXID, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "source transaction id"},
		icego.NestedField{ID: 4, Name: colCommitTS, Type: icego.PrimitiveTypes.TimestampTz, Required: true},
		icego.NestedField{ID: 5, Name: colSeq, Type: icego.PrimitiveTypes.Int64, Required: true, Doc: "position of the change in its transaction"},
		icego.NestedField{ID: 6, Name: colBefore, Type: &icego.StructType{FieldList: before}},
		icego.NestedField{ID: 7, Name: colAfter, Type: &icego.StructType{FieldList: after}},
	), nil
}

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
		t, err := mapping.For(rel.QualifiedName(), mapping.Column{Name: c.Name, TypeOID: c.TypeOID, TypeMod: c.TypeMod, TypeName: c.TypeName})
		if err != nil {
			return err
		}
		if got[i].Name != c.Name || !got[i].Type.Equals(t) {
			return &SchemaMismatchError{Table: table, Reason: fmt.Sprintf("column %d is %s %s in Iceberg, %s %s at the source", i+1, got[i].Name, got[i].Type, c.Name, t)}
		}
	}
	return nil
}

// SchemaMismatchError reports a source table whose columns differ from its
// Iceberg table's: a schema change that is not propagated yet.
type SchemaMismatchError struct{ Table, Reason string }

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("%s: source schema differs from the Iceberg table (%s); schema evolution is not supported yet: stop the bridge, or drop the Iceberg table and let it be copied again", e.Table, e.Reason)
}
