package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	icego "github.com/apache/iceberg-go"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Spark SQL as a reader of the schema evolution tests (ddl_test.go,
// ddl_capture_test.go): after each step it reads a mirror and its changelog
// through the REST catalog pg2iceberg serve exposes, and the test requires
// PostgreSQL's columns (names, Spark's types, order) and values.

// sparkColumn is a column as Spark SQL types it (readers/spark_session.py's
// "schema" op): Type is Spark's name for the type (DataType.simpleString);
// a struct has its Fields too.
type sparkColumn struct {
	Name     string        `json:"name"`
	Type     string        `json:"type"`
	Nullable bool          `json:"nullable"`
	Fields   []sparkColumn `json:"fields,omitempty"`
}

// columnsText prints columns as "id int NOT NULL, after struct<id int, v
// string>", which compares order, names, types and nullability at once.
func columnsText(cols []sparkColumn) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		typ := c.Type
		if c.Fields != nil {
			typ = "struct<" + columnsText(c.Fields) + ">"
		}
		parts[i] = c.Name + " " + typ
		if !c.Nullable {
			parts[i] += " NOT NULL"
		}
	}
	return strings.Join(parts, ", ")
}

// sparkType is Spark's name for an Iceberg type, as Iceberg's Spark
// integration maps it (TypeToSparkType): long is bigint, timestamptz is
// timestamp and timestamp timestamp_ntz, uuid is string, fixed is binary,
// list is array. "" for what Spark cannot read (time, nanosecond
// timestamps, and the v3 types).
func sparkType(t icego.Type) string {
	switch t := t.(type) {
	case icego.BooleanType:
		return "boolean"
	case icego.Int32Type:
		return "int"
	case icego.Int64Type:
		return "bigint"
	case icego.Float32Type:
		return "float"
	case icego.Float64Type:
		return "double"
	case icego.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale())
	case icego.DateType:
		return "date"
	case icego.TimestampType:
		return "timestamp_ntz"
	case icego.TimestampTzType:
		return "timestamp"
	case icego.StringType, icego.UUIDType:
		return "string"
	case icego.BinaryType, icego.FixedType:
		return "binary"
	case *icego.StructType:
		fields := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			fields[i] = f.Name + ":" + sparkType(f.Type)
		}
		return "struct<" + strings.Join(fields, ",") + ">"
	case *icego.ListType:
		return "array<" + sparkType(t.Element) + ">"
	case *icego.MapType:
		return "map<" + sparkType(t.KeyType) + "," + sparkType(t.ValueType) + ">"
	}
	return ""
}

// sparkColumnsOf is how Spark should type Iceberg fields: a required field
// is not nullable.
func sparkColumnsOf(t *testing.T, fields []icego.NestedField) []sparkColumn {
	t.Helper()
	cols := make([]sparkColumn, len(fields))
	for i, f := range fields {
		cols[i] = sparkColumn{Name: f.Name, Type: sparkType(f.Type), Nullable: !f.Required}
		if cols[i].Type == "" {
			t.Fatalf("column %s: Spark has no type for Iceberg's %s", f.Name, f.Type)
		}
		if st, ok := f.Type.(*icego.StructType); ok {
			cols[i].Fields = sparkColumnsOf(t, st.FieldList)
		}
	}
	return cols
}

// pgIcebergTypes are the Iceberg types of PostgreSQL types as format_type
// prints them, following docs/type-mapping.md, for the types these tests
// declare; numeric(p,s) is in pgIcebergType.
var pgIcebergTypes = map[string]icego.Type{
	"boolean":                     icego.PrimitiveTypes.Bool,
	"smallint":                    icego.PrimitiveTypes.Int32,
	"integer":                     icego.PrimitiveTypes.Int32,
	"bigint":                      icego.PrimitiveTypes.Int64,
	"real":                        icego.PrimitiveTypes.Float32,
	"double precision":            icego.PrimitiveTypes.Float64,
	"text":                        icego.PrimitiveTypes.String,
	"character varying":           icego.PrimitiveTypes.String,
	"date":                        icego.PrimitiveTypes.Date,
	"timestamp without time zone": icego.PrimitiveTypes.Timestamp,
	"timestamp with time zone":    icego.PrimitiveTypes.TimestampTz,
	"bytea":                       icego.PrimitiveTypes.Binary,
	"uuid":                        icego.PrimitiveTypes.UUID,
}

func pgIcebergType(decl string) (icego.Type, bool) {
	if typ, ok := pgIcebergTypes[decl]; ok {
		return typ, true
	}
	if elem, ok := strings.CutSuffix(decl, "[]"); ok {
		typ, ok := pgIcebergType(elem)
		return &icego.ListType{Element: typ}, ok
	}
	var p, s int
	if n, _ := fmt.Sscanf(decl, "numeric(%d,%d)", &p, &s); n == 2 && p <= 38 && s >= 0 && s <= p {
		return icego.DecimalTypeOf(p, s), true
	}
	return nil, false
}

// pgFields are a PostgreSQL table's live columns in order, as the Iceberg
// fields of its mirror: mapped types, key columns required (see
// "Nullability" in docs/type-mapping.md).
func pgFields(t *testing.T, conn *pgx.Conn, table string) []icego.NestedField {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT a.attname, format_type(a.atttypid, a.atttypmod), coalesce(a.attnum = ANY (i.indkey), false)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fields []icego.NestedField
	for rows.Next() {
		var name, decl string
		var key bool
		if err := rows.Scan(&name, &decl, &key); err != nil {
			t.Fatal(err)
		}
		typ, ok := pgIcebergType(decl)
		if !ok {
			t.Fatalf("%s.%s: no Iceberg type for %s here: extend pgIcebergType", table, name, decl)
		}
		fields = append(fields, icego.NestedField{Name: name, Type: typ, Required: key})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return fields
}

// changelogColumns is how Spark should type the changelog of a mirror with
// the given fields: the changelog's own columns as its Iceberg schema has
// them, and before and after holding the mirror's fields, all optional.
func changelogColumns(t *testing.T, tg target, ident string, mirror []icego.NestedField) []sparkColumn {
	t.Helper()
	image := make([]icego.NestedField, len(mirror))
	for i, f := range mirror {
		f.Required = false
		image[i] = f
	}
	fields := loadTable(t, tg, ident+"__changelog").Schema().Fields()
	for i, f := range fields {
		if f.Name == "before" || f.Name == "after" {
			fields[i].Type = &icego.StructType{FieldList: image}
		}
	}
	return sparkColumnsOf(t, fields)
}

func (s *sparkSession) columns(t *testing.T, sql string) ([]sparkColumn, bool) {
	t.Helper()
	var cols []sparkColumn
	ok := s.do(t, map[string]string{"op": "schema", "sql": sql}, &cols)
	return cols, ok
}

func (s *sparkSession) dump(t *testing.T, sql string) ([]row, bool) {
	t.Helper()
	var rows []row
	ok := s.do(t, map[string]string{"op": "dump", "sql": sql}, &rows)
	return rows, ok
}

// sparkReads requires Spark's SELECT * FROM from (a table, with any time
// travel clause) to have the columns cols and the rows want, by key.
func sparkReads(t *testing.T, s *sparkSession, what, from string, cols []sparkColumn, key string, want []row) {
	t.Helper()
	got, ok := s.columns(t, "SELECT * FROM "+from)
	if !ok {
		return
	}
	if g, w := columnsText(got), columnsText(cols); g != w {
		t.Errorf("Spark SQL %s: columns\n  %s\nwant\n  %s", what, g, w)
	} else {
		t.Logf("Spark SQL %s: columns %s", what, g)
	}
	if rows, ok := s.dump(t, "SELECT * FROM "+from); ok {
		compareRows(t, "Spark SQL", what, key, rows, want)
	}
}

// sparkChecksTable has Spark read the mirror ident (schema.table) of the
// PostgreSQL table pgTable and its changelog, and requires PostgreSQL's
// columns and rows (want) in the mirror and the mirror's columns in the
// changelog's before and after. When since is not 0, the last after image
// of every key changed in a transaction committed at or after since must
// be the key's row in want: such a change was made under the current
// schema. It returns the mirror's columns, as Spark should type them.
func sparkChecksTable(t *testing.T, s *sparkSession, tg target, conn *pgx.Conn, pgTable, ident, key string, want []row, since pglogrepl.LSN, step string) []sparkColumn {
	t.Helper()
	fields := pgFields(t, conn, pgTable)
	cols := sparkColumnsOf(t, fields)
	sparkReads(t, s, ident+" after "+step, "pg."+ident, cols, key, want)
	changelog := "pg." + ident + "__changelog"
	got, ok := s.columns(t, "SELECT * FROM "+changelog)
	if !ok {
		return cols
	}
	if g, w := columnsText(got), columnsText(changelogColumns(t, tg, ident, fields)); g != w {
		t.Errorf("Spark SQL %s__changelog after %s: columns\n  %s\nwant\n  %s", ident, step, g, w)
	} else {
		t.Logf("Spark SQL %s__changelog after %s: columns %s", ident, step, g)
	}
	if since == 0 {
		return cols
	}
	changes, ok := s.dump(t, fmt.Sprintf("SELECT lsn, seq, after FROM %s WHERE lsn >= %d AND op IN ('I', 'U')", changelog, uint64(since)))
	if !ok {
		return cols
	}
	last := lastImages(t, changes, key)
	if len(last) == 0 {
		t.Errorf("Spark SQL %s__changelog after %s: no change at or after %s", ident, step, since)
		return cols
	}
	changed := rowsKey(last, key)
	var wantChanged []row
	for _, r := range want {
		if _, ok := changed[fmt.Sprint(r[key])]; ok {
			wantChanged = append(wantChanged, r)
		}
	}
	compareRows(t, "Spark SQL", fmt.Sprintf("%s__changelog after %s (the last after image of each of the %d keys changed from %s on)", ident, step, len(last), since), key, last, wantChanged)
	return cols
}

// lastImages is the after image of each key's last change (by lsn, then
// seq) among changes.
func lastImages(t *testing.T, changes []row, key string) []row {
	t.Helper()
	type at struct{ lsn, seq int64 }
	last := map[string]row{}
	when := map[string]at{}
	for _, c := range changes {
		after, _ := c["after"].(map[string]any)
		if after == nil {
			continue
		}
		k, a := fmt.Sprint(after[key]), at{int64Of(t, c["lsn"]), int64Of(t, c["seq"])}
		if w, ok := when[k]; ok && (w.lsn > a.lsn || w.lsn == a.lsn && w.seq > a.seq) {
			continue
		}
		last[k], when[k] = after, a
	}
	out := make([]row, 0, len(last))
	for _, r := range last {
		out = append(out, r)
	}
	return out
}

// sparkChangelogAsPyiceberg requires Spark and pyiceberg to read every row
// of a changelog alike, before and after images of every schema included.
// It returns Spark's rows, each with its change's "lsn/seq" as "change".
func sparkChangelogAsPyiceberg(t *testing.T, s *sparkSession, tg target, ident string) []row {
	t.Helper()
	spark, ok := s.dump(t, "SELECT concat(lsn, '/', seq) AS change, * FROM pg."+ident+"__changelog")
	if !ok {
		return nil
	}
	py := pyicebergRows(t, tg, ident+"__changelog")
	for _, r := range py {
		r["change"] = fmt.Sprintf("%v/%v", r["lsn"], r["seq"])
	}
	compareRows(t, "Spark SQL", ident+"__changelog (pyiceberg's read standing in for PostgreSQL)", "change", spark, py)
	return spark
}

// walLSN is PostgreSQL's current WAL insert position.
func walLSN(t *testing.T, conn *pgx.Conn) pglogrepl.LSN {
	t.Helper()
	return lsnOf(t, conn, "SELECT pg_current_wal_insert_lsn()::text")
}

// Spark reads a table with an array column after an int → bigint
// promotion with its default, vectorized reader: a query of primitive
// columns only takes it, and the files from before the promotion hold the
// column as INT32. With the INT(32, signed) annotation, which pqarrow gave
// nested tables' files, iceberg-spark-runtime 1.10.1 fails there with
// "BigIntVector cannot be cast to IntVector" (apache/iceberg#16341).
func TestSparkVectorizedPromotionNested(t *testing.T) {
	t.Parallel()
	jar := sparkJar(t)
	pg, conn := startSource(t, `CREATE TABLE docs (id int PRIMARY KEY, n int, tags text[], title text);
		INSERT INTO docs SELECT g, g * 7, CASE WHEN g % 5 = 0 THEN NULL WHEN g % 5 = 1 THEN '{}' ELSE ARRAY['t' || g, NULL, 'u'] END, 'doc ' || g
			FROM generate_series(1, 200) g;
		CREATE PUBLICATION docs_pub FOR TABLE docs;`)
	tg := localTarget(t)
	b := startBridge(t, nil, runArgs(pg, "docs_pub", tg)...)
	waitSlot(t, conn, "pg2iceberg_docs_pub", b)
	uri, token := serveCatalog(t, tg)
	spark := startSpark(t, uri, token, jar)
	// Streamed before the promotion: mirror and changelog files with n as
	// INT32 beside the copy's.
	exec1(t, conn, `UPDATE docs SET n = -n, tags = ARRAY['streamed'] WHERE id <= 20`)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)

	exec1(t, conn, `ALTER TABLE docs ALTER COLUMN n TYPE bigint`)
	since := walLSN(t, conn)
	exec1(t, conn, `UPDATE docs SET n = n + 5000000000 WHERE id % 10 = 3`)
	waitCaughtUp(t, conn, "pg2iceberg_docs_pub", b)

	flat := pgRows(t, conn, "id::text AS id, n::text AS n, title", "docs")
	if got, ok := spark.dump(t, "SELECT id, n, title FROM pg.public.docs"); ok {
		compareRows(t, "Spark SQL (vectorized)", "public.docs", "id", got, flat)
	}
	all := pgRows(t, conn, "id::text AS id, n::text AS n, array_to_json(tags) AS tags, title", "docs")
	sparkChecksTable(t, spark, tg, conn, "docs", "public.docs", "id", all, since, "int to bigint")
	if got, ok := spark.dump(t, "SELECT after.id AS id, after.n AS n, after.title AS title FROM pg.public.docs__changelog WHERE op = 'U' AND lsn < "+fmt.Sprint(uint64(since))); ok {
		compareRows(t, "Spark SQL", "public.docs__changelog (after images from before the promotion)", "id", got, pgRows(t, conn, "id::text AS id, (n - CASE WHEN id % 10 = 3 THEN 5000000000 ELSE 0 END)::text AS n, title", "docs WHERE id <= 20"))
	}
	b.stop(t)
}
