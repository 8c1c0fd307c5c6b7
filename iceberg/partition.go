package iceberg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/pg2iceberg/pg2iceberg/decode"
)

// ParsePartitionField parses one field of a configured partition spec:
// "day(created_at)", "bucket(16, id)", "truncate(4, name)", "identity(x)"
// or a bare column name (identity); year, month, day and hour also in
// Spark's plural (days(ts)).
func ParsePartitionField(s string) (col string, tr icego.Transform, err error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if s == "" {
			return "", nil, fmt.Errorf("empty partition field")
		}
		return s, icego.IdentityTransform{}, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", nil, fmt.Errorf("partition field %q: missing the closing parenthesis", s)
	}
	name := strings.ToLower(strings.TrimSpace(s[:open]))
	args := strings.Split(s[open+1:len(s)-1], ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	switch name {
	case "bucket", "truncate":
		if len(args) != 2 || args[1] == "" {
			return "", nil, fmt.Errorf("partition field %q: %s takes a number and a column, e.g. %s(16, id)", s, name, name)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 0 {
			return "", nil, fmt.Errorf("partition field %q: %q is not a positive number", s, args[0])
		}
		if name == "bucket" {
			return args[1], icego.BucketTransform{NumBuckets: n}, nil
		}
		return args[1], icego.TruncateTransform{Width: n}, nil
	}
	if len(args) != 1 || args[0] == "" {
		return "", nil, fmt.Errorf("partition field %q: %s takes one column, e.g. %s(created_at)", s, name, name)
	}
	switch strings.TrimSuffix(name, "s") {
	case "identity":
		return args[0], icego.IdentityTransform{}, nil
	case "year":
		return args[0], icego.YearTransform{}, nil
	case "month":
		return args[0], icego.MonthTransform{}, nil
	case "day":
		return args[0], icego.DayTransform{}, nil
	case "hour":
		return args[0], icego.HourTransform{}, nil
	}
	return "", nil, fmt.Errorf("partition field %q: unknown transform %q (the transforms are identity, bucket, truncate, year, month, day, hour)", s, name)
}

// partitionFieldName is the name Iceberg's writers give a partition field.
func partitionFieldName(col string, tr icego.Transform) string {
	switch t := tr.(type) {
	case icego.IdentityTransform:
		return col
	case icego.BucketTransform:
		return fmt.Sprintf("%s_bucket_%d", col, t.NumBuckets)
	case icego.TruncateTransform:
		return fmt.Sprintf("%s_trunc_%d", col, t.Width)
	}
	return col + "_" + tr.String()
}

// ConfiguredSpec is the partition spec the configuration's fields give
// over schema sc (nil fields: unpartitioned). A column the schema lacks
// or a transform its type does not take is an error naming both.
func ConfiguredSpec(sc *icego.Schema, fields []string) (icego.PartitionSpec, error) {
	var out []icego.PartitionField
	for i, s := range fields {
		col, tr, err := ParsePartitionField(s)
		if err != nil {
			return icego.PartitionSpec{}, err
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return icego.PartitionSpec{}, fmt.Errorf("partition field %q: the table has no column %s", s, col)
		}
		if !tr.CanTransform(f.Type) {
			return icego.PartitionSpec{}, fmt.Errorf("partition field %q: %s cannot partition column %s of type %s", s, tr, col, f.Type)
		}
		out = append(out, icego.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000 + i, Name: partitionFieldName(col, tr), Transform: tr})
	}
	return icego.NewPartitionSpec(out...), nil
}

// sameFields reports whether two specs partition by the same sources and
// transforms, in order (field IDs and names aside).
func sameFields(a, b icego.PartitionSpec) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.SourceID() != fb.SourceID() || !fa.Transform.Equals(fb.Transform) {
			return false
		}
	}
	return true
}

// partitioner computes the partition of a mirror's rows under one spec:
// the row's source values are appended to scratch builders of their Arrow
// type (the same conversion the data file's builders do), read back and
// transformed.
type partitioner struct {
	spec    icego.PartitionSpec
	colIdx  []int // relation column → scratch builder (-1: none)
	scratch []array.Builder
	fields  []partField
}

// partField is one field of the spec: its scratch builder (-1: no
// relation column fills its source, NULL) and source type.
type partField struct {
	slot int
	typ  icego.Type
	pf   icego.PartitionField
}

// newPartitioner binds spec over schema sc to the relation columns of
// colIdx (relation column → top-level field); nil for an unpartitioned
// spec.
func newPartitioner(spec icego.PartitionSpec, sc *icego.Schema, asc *arrow.Schema, colIdx []int) (*partitioner, error) {
	if spec.IsUnpartitioned() {
		return nil, nil
	}
	p := &partitioner{spec: spec, colIdx: make([]int, len(colIdx))}
	for i := range p.colIdx {
		p.colIdx[i] = -1
	}
	top := map[int]int{} // field ID → top-level field
	for j, f := range sc.Fields() {
		top[f.ID] = j
	}
	for _, pf := range spec.Fields() {
		j, ok := top[pf.SourceID()]
		if !ok {
			return nil, fmt.Errorf("partition field %s: its source is not a top-level column; the bridge partitions by top-level columns only", pf.Name)
		}
		f := partField{slot: -1, typ: sc.Fields()[j].Type, pf: pf}
		for i, c := range colIdx {
			if c == j {
				f.slot = len(p.scratch)
				p.colIdx[i] = f.slot
				p.scratch = append(p.scratch, array.NewBuilder(memory.DefaultAllocator, asc.Field(j).Type))
			}
		}
		p.fields = append(p.fields, f)
	}
	return p, nil
}

// partition returns the partition values of a row (by partition field
// ID) and a key naming the partition within the spec.
func (p *partitioner) partition(rel *decode.Relation, row decode.Tuple) (map[int]any, string, error) {
	if i, err := appendTuple(func(j int) array.Builder { return p.scratch[j] }, p.colIdx, nil, rel, row); err != nil {
		return nil, "", fmt.Errorf("column %s: %w", rel.Columns[i].Name, err)
	}
	vals := make(map[int]any, len(p.fields))
	var key strings.Builder
	for _, f := range p.fields {
		var v any
		if f.slot >= 0 {
			arr := p.scratch[f.slot].NewArray()
			src, err := arrowValue(arr, f.typ)
			arr.Release()
			if err != nil {
				return nil, "", fmt.Errorf("partition field %s: %w", f.pf.Name, err)
			}
			if v, err = transformValue(f.pf.Transform, src); err != nil {
				return nil, "", fmt.Errorf("partition field %s: %w", f.pf.Name, err)
			}
		}
		vals[f.pf.FieldID] = v
		fmt.Fprintf(&key, "%T:%v/", v, v)
	}
	return vals, key.String(), nil
}

// transformValue applies tr to a source value (nil: NULL).
func transformValue(tr icego.Transform, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	lit, err := literalOf(v)
	if err != nil {
		return nil, err
	}
	out := tr.Apply(icego.Optional[icego.Literal]{Valid: true, Val: lit})
	if !out.Valid {
		return nil, nil
	}
	return out.Val.Any(), nil
}

// literalOf is the Iceberg literal of a value arrowValue returned.
func literalOf(v any) (icego.Literal, error) {
	switch v := v.(type) {
	case bool:
		return icego.NewLiteral(v), nil
	case int32:
		return icego.NewLiteral(v), nil
	case int64:
		return icego.NewLiteral(v), nil
	case float32:
		return icego.NewLiteral(v), nil
	case float64:
		return icego.NewLiteral(v), nil
	case icego.Date:
		return icego.NewLiteral(v), nil
	case icego.Time:
		return icego.NewLiteral(v), nil
	case icego.Timestamp:
		return icego.NewLiteral(v), nil
	case string:
		return icego.NewLiteral(v), nil
	case []byte:
		return icego.NewLiteral(v), nil
	case icego.Decimal:
		return icego.NewLiteral(v), nil
	case icego.Literal: // UUID, fixed
		return v, nil
	}
	return nil, fmt.Errorf("cannot partition by a value of Go type %T", v)
}

// arrowValue is the one value of a one-row array as an Iceberg value (nil:
// NULL), for a source column of Iceberg type typ.
func arrowValue(arr arrow.Array, typ icego.Type) (any, error) {
	if arr.Len() != 1 {
		return nil, fmt.Errorf("expected one value, got %d", arr.Len())
	}
	if arr.IsNull(0) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(0), nil
	case *array.Int32:
		return a.Value(0), nil
	case *array.Int64:
		return a.Value(0), nil
	case *array.Float32:
		return a.Value(0), nil
	case *array.Float64:
		return a.Value(0), nil
	case *array.Date32:
		return icego.Date(a.Value(0)), nil
	case *array.Time64:
		return icego.Time(a.Value(0)), nil
	case *array.Timestamp:
		if u := a.DataType().(*arrow.TimestampType).Unit; u != arrow.Microsecond {
			return nil, fmt.Errorf("timestamp of unit %s", u)
		}
		return icego.Timestamp(a.Value(0)), nil
	case *array.String:
		return a.Value(0), nil
	case *array.LargeString:
		return a.Value(0), nil
	case *array.Binary:
		return a.Value(0), nil
	case *array.Decimal128:
		return icego.Decimal{Val: a.Value(0), Scale: int(a.DataType().(*arrow.Decimal128Type).Scale)}, nil
	case *extensions.UUIDArray:
		return icego.NewLiteral(a.Value(0)), nil
	case *array.FixedSizeBinary:
		lit, err := icego.NewLiteral(a.Value(0)).To(typ)
		if err != nil {
			return nil, err
		}
		return lit, nil
	}
	return nil, fmt.Errorf("cannot partition by a column of Arrow type %s", arr.DataType())
}

// PropPartition is the table property recording the configuration's
// partition fields last applied to the table (see followConfiguredSpec).
const PropPartition = "pg2iceberg.partition"

// followConfiguredSpec makes the configuration's partition fields the
// table's current spec when they changed since they were last applied
// (PropPartition): a new spec, which new files are written under; files
// written before keep theirs. When the configuration did not change, the
// table's spec stands, one another writer set included (Spark's ALTER
// TABLE ... ADD PARTITION FIELD).
func (t *icebergTable) followConfiguredSpec(ctx context.Context, fields []string) error {
	want, changed := t.configChanged(PropPartition, fields)
	if !changed {
		return nil
	}
	spec, err := ConfiguredSpec(t.tbl.Schema(), fields)
	if err != nil {
		return fmt.Errorf("%s: %w", t.name(), err)
	}
	txn := t.tbl.NewTransaction()
	if cur := t.tbl.Spec(); !sameFields(spec, cur) {
		us := txn.UpdateSpec(true)
		for _, f := range cur.Fields() {
			us.RemoveField(f.Name)
		}
		for _, f := range spec.Fields() {
			src, _ := t.tbl.Schema().FindColumnName(f.SourceID())
			us.AddField(src, f.Transform, f.Name)
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("partition %s by %s: %w", t.name(), want, err)
		}
		if t.log != nil {
			t.log.Info("partition spec changed by the configuration", "table", t.name(), "from", cur.String(), "to", want)
		}
	}
	return t.commitTxn(ctx, txn, "partition", icego.Properties{PropPartition: want})
}
