package replication

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// typeResolver describes column types from pg_type and pg_attribute as
// mapping.Type trees: array element types and dimensions, domain base
// types, composite attributes (recursively), enums, ranges, and the
// extension that owns a type. It caches catalog rows for one preflight.
type typeResolver struct {
	conn  *pgx.Conn
	types map[uint32]*typeRow
	attrs map[uint32][]attrRow // composite type's relation → attributes
}

// typeRow is what pg_type says about one type.
type typeRow struct {
	schema, name, ext string
	typtype           byte
	isArray           bool
	elem              uint32
	delim             byte // the type's own typdelim
	base              uint32
	typmod            int32 // a domain's typtypmod
	ndims             int   // a domain's typndims
	relid             uint32
}

type attrRow struct {
	name  string
	oid   uint32
	mod   int32
	ndims int
}

func newTypeResolver(conn *pgx.Conn) *typeResolver {
	return &typeResolver{conn: conn, types: make(map[uint32]*typeRow), attrs: make(map[uint32][]attrRow)}
}

// maxResolveDepth bounds nesting (PostgreSQL forbids cycles).
const maxResolveDepth = 32

// resolve describes type oid used with typmod mod in a column (or a
// composite attribute) declared with ndims array dimensions.
func (r *typeResolver) resolve(ctx context.Context, oid uint32, mod int32, ndims, depth int) (*mapping.Type, error) {
	if depth > maxResolveDepth {
		return nil, fmt.Errorf("type %d nests more than %d levels deep", oid, maxResolveDepth)
	}
	row, err := r.row(ctx, oid)
	if err != nil {
		return nil, err
	}
	t := &mapping.Type{OID: oid, Schema: row.schema, Name: row.name, Extension: row.ext, Kind: mapping.Kind(row.typtype), Mod: mod}
	switch {
	case row.isArray && row.elem != 0:
		t.Kind = mapping.KindArray
		t.Dims = max(ndims, 1)
		if t.Elem, err = r.resolve(ctx, row.elem, mod, 0, depth+1); err != nil {
			return nil, err
		}
		elemRow, err := r.row(ctx, row.elem)
		if err != nil {
			return nil, err
		}
		t.Delim = elemRow.delim
	case row.typtype == 'd':
		if t.Base, err = r.resolve(ctx, row.base, row.typmod, row.ndims, depth+1); err != nil {
			return nil, err
		}
	case row.typtype == 'c':
		attrs, err := r.attributes(ctx, row.relid)
		if err != nil {
			return nil, err
		}
		for _, a := range attrs {
			ft, err := r.resolve(ctx, a.oid, a.mod, a.ndims, depth+1)
			if err != nil {
				return nil, err
			}
			t.Fields = append(t.Fields, mapping.Field{Name: a.name, Type: ft})
		}
	}
	return t, nil
}

func (r *typeResolver) row(ctx context.Context, oid uint32) (*typeRow, error) {
	if row, ok := r.types[oid]; ok {
		return row, nil
	}
	row := &typeRow{}
	var typtype, delim string
	err := r.conn.QueryRow(ctx, `
		SELECT n.nspname, t.typname, t.typtype::text, t.typinput = 'array_in'::regproc, t.typelem, t.typdelim::text,
		       t.typbasetype, t.typtypmod, t.typndims, t.typrelid,
		       COALESCE((SELECT e.extname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
		                 WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid
		                   AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' LIMIT 1), '')
		FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE t.oid = $1`, oid).Scan(&row.schema, &row.name, &typtype, &row.isArray, &row.elem, &delim,
		&row.base, &row.typmod, &row.ndims, &row.relid, &row.ext)
	if err != nil {
		return nil, fmt.Errorf("describe type %d from pg_type: %w", oid, err)
	}
	if len(typtype) != 1 || len(delim) != 1 {
		return nil, fmt.Errorf("describe type %d from pg_type: typtype %q, typdelim %q", oid, typtype, delim)
	}
	row.typtype, row.delim = typtype[0], delim[0]
	r.types[oid] = row
	return row, nil
}

func (r *typeResolver) attributes(ctx context.Context, relid uint32) ([]attrRow, error) {
	if a, ok := r.attrs[relid]; ok {
		return a, nil
	}
	rows, err := r.conn.Query(ctx, `
		SELECT attname, atttypid, atttypmod, attndims FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, relid)
	if err != nil {
		return nil, fmt.Errorf("describe composite type of relation %d: %w", relid, err)
	}
	attrs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (attrRow, error) {
		var a attrRow
		err := row.Scan(&a.name, &a.oid, &a.mod, &a.ndims)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("describe composite type of relation %d: %w", relid, err)
	}
	r.attrs[relid] = attrs
	return attrs, nil
}

// DescribeType describes a type as preflight does for a column of that
// type declared with ndims array dimensions.
func DescribeType(ctx context.Context, conn *pgx.Conn, oid uint32, mod int32, ndims int) (*mapping.Type, error) {
	return newTypeResolver(conn).resolve(ctx, oid, mod, ndims, 0)
}
