package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// The type matrix: one table with a column of every mapped type, filled
// with ordinary and edge values, copied by the initial copy, then changed
// through the stream. Every value read back by pyiceberg and iceberg-go
// (and by Spark SQL, in types_spark_test.go) must equal PostgreSQL's,
// compared in the canonical text forms of docs/type-mapping.md
// ("Canonical text forms").

const typesSetup = `
CREATE EXTENSION hstore;
CREATE EXTENSION citext;
CREATE SCHEMA types;
CREATE TYPE types.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN types.posint AS int CHECK (VALUE > 0);
CREATE DOMAIN types.price AS numeric(12,2);
CREATE DOMAIN types.tags AS text[];
CREATE TYPE types.geo AS (lat float8, lon float8);
CREATE TYPE types.address AS (street text, zip varchar(10), geo types.geo, tags text[]);

-- Canonical text forms of PostgreSQL values (docs/type-mapping.md).
CREATE SCHEMA canon;
-- The output function's text (a cast to text differs for char(n) and inet).
CREATE FUNCTION canon.out(v anyelement) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$ SELECT concat(v) $$;
CREATE FUNCTION canon.b(v bool) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$ SELECT CASE WHEN v THEN 't' ELSE 'f' END $$;
CREATE FUNCTION canon.bytes(v bytea) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$ SELECT '\x' || encode(v, 'hex') $$;
CREATE FUNCTION canon.tm(v time) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$ SELECT to_char(date '2000-01-01' + v, 'HH24:MI:SS.US') $$;
CREATE FUNCTION canon.ts(v timestamp) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT to_char(v, 'YYYY-MM-DD HH24:MI:SS.US') || CASE WHEN v < '0001-01-01' THEN ' BC' ELSE '' END $$;
CREATE FUNCTION canon.tstz(v timestamptz) RETURNS text STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' || CASE WHEN v AT TIME ZONE 'UTC' < '0001-01-01' THEN ' BC' ELSE '' END $$;
CREATE FUNCTION canon.iv(v interval) RETURNS json STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT json_build_object('months', (extract(year FROM v) * 12 + extract(month FROM v))::bigint::text,
    'days', extract(day FROM v)::bigint::text,
    'micros', ((extract(hour FROM v) * 3600 + extract(minute FROM v) * 60) * 1000000 + extract(microseconds FROM v))::bigint::text) $$;
CREATE FUNCTION canon.geo(v types.geo) RETURNS json STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT json_build_object('lat', (v).lat::text, 'lon', (v).lon::text) $$;
CREATE FUNCTION canon.address(v types.address) RETURNS json STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT json_build_object('street', (v).street, 'zip', (v).zip::text, 'geo', canon.geo((v).geo), 'tags', array_to_json((v).tags)) $$;
CREATE FUNCTION canon.hstore(v hstore) RETURNS json STRICT IMMUTABLE LANGUAGE sql AS $$
  SELECT coalesce(json_agg(json_build_object('key', key, 'value', value) ORDER BY key COLLATE "C"), '[]'::json) FROM each(v) $$;
`

// typeCol is a column of the matrix: its declaration, and the SQL that
// gives its canonical form (%s is the column).
type typeCol struct {
	name, decl, canon string
}

// unnestCanon is the canonical form of a one-dimensional array whose
// elements need elem (%s is the element).
func unnestCanon(elem string) string {
	return `CASE WHEN %[1]s IS NULL THEN NULL ELSE (SELECT coalesce(json_agg(` + strings.ReplaceAll(elem, "%s", "%[1]s[i]") +
		` ORDER BY i), '[]'::json) FROM generate_subscripts(%[1]s, 1) i) END`
}

func typeColumns() []typeCol {
	text := "canon.out(%s)"
	cols := []typeCol{
		{"id", "int PRIMARY KEY", text},
		{"c_bool", "bool", "canon.b(%s)"},
		{"c_int2", "int2", text},
		{"c_int4", "int4", text},
		{"c_int8", "int8", text},
		{"c_oid", "oid", text},
		{"c_float4", "float4", text},
		{"c_float8", "float8", text},
		{"c_num_10_2", "numeric(10,2)", text},
		{"c_num_38_10", "numeric(38,10)", text},
		{"c_num", "numeric", text},
		{"c_num_50_20", "numeric(50,20)", text},
		{"c_num_neg", "numeric(5,-2)", text},
		{"c_num_tiny", "numeric(3,5)", text},
		{"c_money", "money", text},
		{"c_text", "text", text},
		{"c_varchar", "varchar(20)", text},
		{"c_bpchar", "char(5)", text},
		{"c_name", "name", text},
		{"c_citext", "citext", text},
		{"c_char", `"char"`, text},
		{"c_bytea", "bytea", "canon.bytes(%s)"},
		{"c_uuid", "uuid", text},
		{"c_date", "date", text},
		{"c_time", "time", "canon.tm(%s)"},
		{"c_timetz", "timetz", text},
		{"c_ts", "timestamp", "canon.ts(%s)"},
		{"c_tstz", "timestamptz", "canon.tstz(%s)"},
		{"c_interval", "interval", "canon.iv(%s)"},
		{"c_json", "json", text},
		{"c_jsonb", "jsonb", text},
		{"c_jsonpath", "jsonpath", text},
		{"c_xml", "xml", text},
		{"c_inet", "inet", text},
		{"c_cidr", "cidr", text},
		{"c_macaddr", "macaddr", text},
		{"c_macaddr8", "macaddr8", text},
		{"c_bit", "bit(8)", text},
		{"c_varbit", "varbit(16)", text},
		{"c_tsvector", "tsvector", text},
		{"c_tsquery", "tsquery", text},
		{"c_lsn", "pg_lsn", text},
		{"c_mood", "types.mood", text},
		{"c_posint", "types.posint", text},
		{"c_price", "types.price", text},
		{"c_tags", "types.tags", "array_to_json(%s)"},
		{"c_address", "types.address", "canon.address(%s)"},
		{"c_int4range", "int4range", text},
		{"c_tstzrange", "tstzrange", text},
		{"c_int4multirange", "int4multirange", text},
		{"c_hstore", "hstore", "canon.hstore(%s)"},
		{"a_int4", "int4[]", "array_to_json(%s::text[])"},
		{"a_int8_2d", "int8[][]", "array_to_json(%s::text[])"},
		{"a_text", "text[]", "array_to_json(%s)"},
		{"a_num", "numeric(10,2)[]", "array_to_json(%s::text[])"},
		{"a_float8", "float8[]", "array_to_json(%s::text[])"},
		{"a_bool", "bool[]", unnestCanon("canon.b(%s)")},
		{"a_bytea", "bytea[]", unnestCanon("canon.bytes(%s)")},
		{"a_uuid", "uuid[]", "array_to_json(%s::text[])"},
		{"a_date", "date[]", "array_to_json(%s::text[])"},
		{"a_tstz", "timestamptz[]", unnestCanon("canon.tstz(%s)")},
		{"a_interval", "interval[]", unnestCanon("canon.iv(%s)")},
		{"a_mood", "types.mood[]", "array_to_json(%s::text[])"},
		{"a_address", "types.address[]", unnestCanon("canon.address(%s)")},
		{"a_jsonb", "jsonb[]", "array_to_json(%s::text[])"},
		{"a_inet", "inet[]", unnestCanon("canon.out(%s)")},
		{"a_tags", "types.tags[]", unnestCanon("array_to_json(%s)")},
		{"a_tsrange", "tsrange[]", "array_to_json(%s::text[])"},
	}
	return append(cols,
		typeCol{"c_geom", "geometry", `'\x' || lower(%s::text)`},
		typeCol{"c_geog", "geography", `'\x' || lower(%s::text)`},
		typeCol{"a_geom", "geometry[]", unnestCanon(`'\x' || lower(%s::text)`)},
	)
}

// typeRows are the rows the initial copy finds, one SQL value per column
// of typeColumns (PostGIS ones last). Row 3 is NULL everywhere but id.
func typeRows() [][]string {
	big := `repeat('ü😀x', 1 << 18)` // 1.75 MB of text
	rows := [][]string{
		{ // ordinary values
			"1", "true", "12", "1234", "123456789012", "42", "1.5", "0.1",
			"12345678.90", "1234567890123456789012345678.0123456789", "3.14159", "1.5", "1234500", "0.00123",
			"12.50", "'hello'", "'varchar'", "'ab'", "'pg_class'", "'MiXeD'", "'x'",
			`'\x00ff10'`, "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
			"'2024-02-29'", "'12:34:56.789'", "'12:34:56.789+05:30'", "'2024-02-29 12:34:56.789'", "'2024-02-29 12:34:56.789+00'",
			"'1 year 2 mons 3 days 04:05:06.789'",
			`'{"a": [1, 2.5, null]}'`, `'{"b": {"c": true}}'`, `'$.a[*] ? (@ > 1)'`, "'<a>x</a>'",
			"'192.168.0.1/24'", "'10.0.0.0/8'", "'08:00:2b:01:02:03'", "'08:00:2b:01:02:03:04:05'",
			"B'10101010'", "B'101'", "'a fat cat sat'", "'fat & cat'", "'16/B374D848'",
			"'happy'", "7", "19.99", "'{a,b}'", "ROW('1 Main St', '12345', ROW(1.5, -2), '{x,y}')",
			"'[1,10)'", "'[2024-01-01 00:00:00+00,2024-02-01 00:00:00+00)'", "'{[1,3), [5,7)}'", "'a=>1, b=>2'",
			"'{1,2,3}'", "'{{1,2},{3,4}}'", "'{a,b}'", "'{1.50,2.25}'", "'{0.1,2.5}'", "'{t,f}'",
			`ARRAY['\x01'::bytea]`, "'{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'", "'{2024-01-01}'",
			`ARRAY['2024-01-01 00:00:00+00'::timestamptz]`, `ARRAY['1 day'::interval]`, "'{ok,happy}'",
			"ARRAY[ROW('a', '1', ROW(1, 2), '{}')::types.address]", `ARRAY['{"k": 1}'::jsonb]`, "'{10.0.0.1}'",
			`'{"{a}","{b,c}"}'`, `ARRAY['[2024-01-01,2024-01-02)'::tsrange]`,
		},
		{ // edge values
			"2", "false", "32767", "-2147483648", "9223372036854775807", "4294967295", "'NaN'", "'-Infinity'",
			"-99999999.99", "9999999999999999999999999999.9999999999", "'NaN'",
			"123456789012345678901234567890.12345678901234567890", "-9999900", "-0.00999",
			"-1234.56", `E'häagen 日本 😀 "quoted" back\\slash\ttab\nnewline'`, "''", "'a'",
			"'abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0'", "'ÄÖÜ'", `'\'`,
			`'\x'`, "'00000000-0000-0000-0000-000000000000'",
			"'4713-11-24 BC'", "'23:59:59.999999'", "'00:00:00-14:59'", "'294247-01-10 04:00:54.775807'", "'4713-11-24 00:00:00+00 BC'",
			"'178956970 years 7 mons 2147483647 days 2562047788:00:54.775807'",
			`'  { "a" : 1 ,  "a": 2 }  '`, `'{"ü": "日本", "n": 1.000}'`, "'strict $'", "'<ü>&amp;</ü>'",
			"'2001:db8::1/128'", "'2001:db8::/32'", "'ff:ff:ff:ff:ff:ff'", "'00:00:00:00:00:00:00:00'",
			"B'00000000'", "B''", `'''quote'':1A ''x y'' "dq"'`, "'!a | (b <-> c)'", "'FFFFFFFF/FFFFFFFF'",
			"'sad'", "2147483647", "-0.01", "'{}'", "ROW(NULL, NULL, NULL, NULL)",
			"'empty'", "'(,)'", "'{}'", `'"q\"uote"=>"back\\slash", "n"=>NULL, ""=>"", "ü"=>"日本"'`,
			"'{}'", "'{}'", `'{"a b","say \"hi\"","back\\slash","","NULL",NULL,"{x}","a,b",ü}'`, "'{NULL}'",
			"'{NaN,Infinity,-Infinity,-0,1e+300,5e-324}'", "'{NULL,t}'",
			`ARRAY['\x'::bytea, NULL, '\x5c22'::bytea]`, "'{NULL}'", `'{"0044-03-15 BC",5874897-12-31}'`,
			`ARRAY['0044-03-15 12:00:00+00 BC'::timestamptz, NULL, '294247-01-10 04:00:54.775807+00']`,
			`'{"1 day",-02:00:00,NULL,"-178956970 years -8 mons"}'`, "'{sad,NULL}'",
			`ARRAY[ROW('x', '1', ROW(1, 2), '{}')::types.address, NULL, ROW(NULL, NULL, NULL, NULL)::types.address, ROW('say "hi", (ok)', NULL, NULL, '{"",NULL}')::types.address]`,
			`ARRAY['[]'::jsonb, NULL, '"x"'::jsonb]`, "'{::1,NULL}'",
			`'{"{}",NULL,"{NULL}"}'`, `ARRAY['empty'::tsrange, '(,)'::tsrange]`,
		},
		nil, // NULLs
		{ // more edge values, and large ones
			"4", "true", "-32768", "2147483647", "-9223372036854775808", "0", "'3.4028235e+38'", "'5e-324'",
			"0", "-0.0000000001", "'-Infinity'", "'0.00000000000000000001'", "0", "0",
			"0", big, "'ü'", "'abcde'", "''", "''", "'z'",
			`decode(repeat('00ff', 1 << 19), 'hex')`, "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
			"'5874897-12-31'", "'00:00:00'", "'24:00:00+14:59'", "'4713-11-24 00:00:00 BC'", "'294247-01-10 04:00:54.775807+00'",
			"'-1 years -2 mons +3 days -04:05:06.000001'",
			"json_build_object('big', " + big + ")", "jsonb_build_object('big', " + big + ")", "'$'", "'<a/>'",
			"'0.0.0.0/0'", "'0.0.0.0/0'", "'00:00:00:00:00:00'", "'ff:ff:ff:ff:ff:ff:ff:ff'",
			"B'11111111'", "B'1111111111111111'", "''", "''", "'0/0'",
			"'ok'", "1", "9999999999.99", "ARRAY[" + big + "]", "ROW(" + big + ", '', ROW('NaN', '-Infinity'), '{NULL}')",
			"'(,5]'", "'[2020-01-01 00:00:00+00,)'", "'{[1,2), [3,4), [5,6)}'", "hstore('big', " + big + ")",
			"'{2147483647,-2147483648}'", "'{{1},{NULL}}'", "ARRAY[" + big + ", NULL]", "'{99999999.99,-99999999.99}'",
			"'{1.5}'", "'{f}'", `ARRAY[decode(repeat('ab', 1 << 19), 'hex')]`, "'{}'", "'{}'", "'{}'", "'{}'", "'{}'", "'{}'",
			"'{}'", "'{}'", "'{}'", "'{}'",
		},
	}
	rows[0] = append(rows[0], "'SRID=4326;POINT(1 2)'", "'POINT(1 2)'", "ARRAY['POINT(1 2)'::geometry, 'LINESTRING(0 0,1 1)'::geometry]")
	rows[1] = append(rows[1], "'POINT EMPTY'", "'SRID=4326;LINESTRING(0 0,1 1)'", "ARRAY['SRID=3857;POINT Z (1 2 3)'::geometry, NULL, 'GEOMETRYCOLLECTION EMPTY'::geometry]")
	rows[3] = append(rows[3], "'MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((2 2,3 2,3 3,2 2)))'", "'POINT(-180 -90)'", "'{}'")
	return rows
}

func TestTypeMatrix(t *testing.T) {
	t.Parallel()
	m := startTypeMatrix(t)
	waitCaughtUp(t, m.conn, typesSlot, m.b)
	compareTypeMatrix(t, m.tg, m.conn, m.cols, "after the initial copy")
	m.stream(t)
	compareTypeMatrix(t, m.tg, m.conn, m.cols, "after the stream")
	checkTypeChangelog(t, m.tg, m.conn, m.cols)
}

// The type matrix with logical_decoding_work_mem at its minimum: the
// stream's transactions (1.75 MB values, nested types) arrive streamed and
// are applied ahead of their commit, changelog files with the commit
// columns written last included, or from the spool where a speculation is
// given up (an UPDATE leaving a TOASTed value unchanged).
func TestTypeMatrixStreamed(t *testing.T) {
	t.Parallel()
	m := startTypeMatrixOf(t, nil, map[string]string{"logical_decoding_work_mem": "64kB"})
	waitCaughtUp(t, m.conn, typesSlot, m.b)
	m.stream(t)
	if !strings.Contains(m.b.log(), "streamed transaction applied ahead") {
		t.Errorf("no transaction of the matrix was applied ahead; log:\n%s", tail(m.b.log(), 30))
	}
	compareTypeMatrix(t, m.tg, m.conn, m.cols, "after the stream, streamed transactions")
	checkTypeChangelog(t, m.tg, m.conn, m.cols)
}

const typesSlot = "pg2iceberg_types_pub"

// requirePostGIS fails the test when the server has no PostGIS: the
// matrix's geometry and geography columns are part of what it proves.
func requirePostGIS(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	var postgis bool
	if err := conn.QueryRow(context.Background(), "SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'postgis'").Scan(&postgis); err != nil {
		t.Fatal(err)
	}
	if !postgis {
		t.Fatal("PostGIS is not installed for this PostgreSQL server, and the type matrix needs it for its geometry and geography columns: run scripts/setup.sh (it installs Debian's postgresql-<major>-postgis-3)")
	}
}

// typeMatrix is one run of the matrix: the source, with types.matrix
// filled and published, and the bridge copying it into tg.
type typeMatrix struct {
	conn  *pgx.Conn
	tg    target
	cols  []typeCol
	names []string // the column names, id first
	b     *bridge
}

// startTypeMatrix creates and fills types.matrix and starts run with the
// extra flags; it returns once the slot (and so the catalog) exists, with
// the initial copy under way.
func startTypeMatrix(t *testing.T, flags ...string) *typeMatrix {
	t.Helper()
	return startTypeMatrixOf(t, nil, nil, flags...)
}

// startTypeMatrixOf is startTypeMatrix with only the columns keep keeps
// (nil: all; the key id always), on a server with extra settings.
func startTypeMatrixOf(t *testing.T, keep func(name string) bool, settings map[string]string, flags ...string) *typeMatrix {
	t.Helper()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{Settings: settings})
	m := &typeMatrix{conn: pgConn(t, pg), tg: localTarget(t)}
	requirePostGIS(t, m.conn)
	if err := pg.Exec(ctx, "CREATE EXTENSION postgis;\n"+typesSetup); err != nil {
		t.Fatal(err)
	}
	all := typeColumns()
	var kept []int
	for i, c := range all {
		if keep == nil || i == 0 || keep(c.name) {
			m.cols = append(m.cols, c)
			kept = append(kept, i)
		}
	}
	if keep == nil && len(m.cols) < 45 {
		t.Fatalf("only %d columns", len(m.cols))
	}
	var decls []string
	for _, c := range m.cols {
		decls = append(decls, c.name+" "+c.decl)
		m.names = append(m.names, c.name)
	}
	exec1(t, m.conn, "CREATE TABLE types.matrix ("+strings.Join(decls, ",\n  ")+")")
	exec1(t, m.conn, "ALTER TABLE types.matrix REPLICA IDENTITY FULL")
	exec1(t, m.conn, "CREATE PUBLICATION types_pub FOR TABLE types.matrix")
	for i, vals := range typeRows() {
		if vals == nil {
			exec1(t, m.conn, fmt.Sprintf("INSERT INTO types.matrix (id) VALUES (%d)", i+1))
			continue
		}
		if len(vals) != len(all) {
			t.Fatalf("row %d has %d values for %d columns", i+1, len(vals), len(all))
		}
		var picked []string
		for _, j := range kept {
			picked = append(picked, vals[j])
		}
		vals = picked
		exec1(t, m.conn, "INSERT INTO types.matrix ("+strings.Join(m.names, ", ")+") VALUES ("+strings.Join(vals, ", ")+")")
	}
	args := runArgs(pg, "types_pub", m.tg)
	m.b = startBridge(t, nil, append(args, flags...)...)
	waitSlot(t, m.conn, typesSlot, m.b)
	return m
}

// stream changes the matrix through the stream: inserts of the same edge
// values, updates of every column, a key change, a delete, an enum label
// added later. It waits for the bridge to apply them and stops it.
func (m *typeMatrix) stream(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	conn := m.conn
	exec1(t, conn, "ALTER TYPE types.mood ADD VALUE 'ecstatic'")
	others := strings.Join(m.names[1:], ", ")
	copyRow := func(from, to int) string {
		return fmt.Sprintf("INSERT INTO types.matrix SELECT %d, %s FROM types.matrix WHERE id = %d", to, others, from)
	}
	setRow := func(id, from int) string {
		return fmt.Sprintf("UPDATE types.matrix SET (%s) = (SELECT %s FROM types.matrix WHERE id = %d) WHERE id = %d", others, others, from, id)
	}
	exec1(t, conn, copyRow(2, 5))
	exec1(t, conn, copyRow(4, 6))
	exec1(t, conn, copyRow(1, 7))
	exec1(t, conn, "UPDATE types.matrix SET c_mood = 'ecstatic', a_mood = '{ecstatic,NULL,sad}' WHERE id = 7")
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		setRow(1, 4), setRow(2, 7), "UPDATE types.matrix SET id = 30 WHERE id = 3", "DELETE FROM types.matrix WHERE id = 4",
		"UPDATE types.matrix SET c_int4 = c_int4 + 1, a_int8_2d = '{{5},{6}}' WHERE id = 5",
		"UPDATE types.matrix SET c_address = ROW('changed', NULL, ROW(0, 0), NULL) WHERE id = 6",
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, conn, typesSlot, m.b)
	m.b.stop(t)
}

// canonSelect is the select list giving each column's canonical form.
func canonSelect(cols []typeCol) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = strings.ReplaceAll(c.canon, "%[1]s", c.name)
		parts[i] = strings.ReplaceAll(parts[i], "%s", c.name) + " AS " + c.name
	}
	return strings.Join(parts, ",\n  ")
}

// compareTypeMatrix compares the mirror, read by pyiceberg and iceberg-go,
// with PostgreSQL, and returns PostgreSQL's rows.
func compareTypeMatrix(t *testing.T, tg target, conn *pgx.Conn, cols []typeCol, when string) []row {
	t.Helper()
	want := digestRows(pgRows(t, conn, canonSelect(cols), "types.matrix"))
	t.Logf("%s: %d rows of %d columns", when, len(want), len(cols))
	compareRows(t, "pyiceberg", "types.matrix "+when, "id", pyicebergNullLists(t, digestRows(pyicebergRows(t, tg, "types.matrix")), want), want)
	compareRows(t, "iceberg-go", "types.matrix "+when, "id", digestRows(icegoRows(t, tg, "types.matrix")), want)
	return want
}

// listOfStructColumns are the matrix's list<struct> columns (arrays of
// composites and of intervals).
var listOfStructColumns = []string{"a_address", "a_interval"}

// pyicebergNullLists works around a pyiceberg bug: its scan rebuilds a
// list<struct> column without the list's validity, so a NULL list reads as
// [] (apache/iceberg-python#3833, fix proposed in #3834). The files hold
// NULL, which iceberg-go reads; here pyiceberg's [] counts as NULL where
// PostgreSQL has NULL, and only in those columns.
func pyicebergNullLists(t *testing.T, got, want []row) []row {
	t.Helper()
	w := rowsKey(want, "id")
	for _, r := range got {
		for _, c := range listOfStructColumns {
			if l, ok := r[c].([]any); ok && len(l) == 0 && w[fmt.Sprint(r["id"])] != nil && w[fmt.Sprint(r["id"])][c] == nil {
				t.Logf("pyiceberg reads NULL %s of id %v as [] (apache/iceberg-python#3833); counted as NULL", c, r["id"])
				r[c] = nil
			}
		}
	}
	return got
}

// checkTypeChangelog: each row's last change in the changelog carries the
// row as it is, in the after image, read by pyiceberg.
func checkTypeChangelog(t *testing.T, tg target, conn *pgx.Conn, cols []typeCol) {
	t.Helper()
	checkTypeChangelogRows(t, "pyiceberg", pyicebergRows(t, tg, "types.matrix__changelog"), conn, cols)
}

// checkTypeChangelogRows is checkTypeChangelog of the changelog rows a
// reader read.
func checkTypeChangelogRows(t *testing.T, reader string, changes []row, conn *pgx.Conn, cols []typeCol) {
	t.Helper()
	want := digestRows(pgRows(t, conn, canonSelect(cols), "types.matrix"))
	sort.SliceStable(changes, func(i, j int) bool {
		if li, lj := fmt.Sprint(changes[i]["lsn"]), fmt.Sprint(changes[j]["lsn"]); li != lj {
			return len(li) < len(lj) || (len(li) == len(lj) && li < lj)
		}
		si, sj := fmt.Sprint(changes[i]["seq"]), fmt.Sprint(changes[j]["seq"])
		return len(si) < len(sj) || (len(si) == len(sj) && si < sj)
	})
	last := map[string]row{}
	for _, c := range changes {
		if before, ok := c["before"].(map[string]any); ok && c["op"] == "U" {
			delete(last, fmt.Sprint(before["id"])) // the key may have changed
		}
		if after, ok := c["after"].(map[string]any); ok && (c["op"] == "I" || c["op"] == "U") {
			last[fmt.Sprint(after["id"])] = row(after)
		}
		if before, ok := c["before"].(map[string]any); ok && c["op"] == "D" {
			delete(last, fmt.Sprint(before["id"]))
		}
	}
	got := make([]row, 0, len(last))
	for _, r := range last {
		got = append(got, r)
	}
	compareRows(t, reader, "types.matrix__changelog (last after image per key)", "id", pyicebergNullLists(t, digestRows(got), want), want)
}

// digestRows replaces strings over 256 bytes by their length and digest,
// so that a difference in a 1 MB value prints as one line.
func digestRows(rows []row) []row {
	var digest func(v any) any
	digest = func(v any) any {
		switch v := v.(type) {
		case string:
			if len(v) > 256 {
				return fmt.Sprintf("<%d bytes sha256 %x>", len(v), sha256.Sum256([]byte(v)))
			}
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = digest(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[k] = digest(e)
			}
			return out
		}
		return v
	}
	out := make([]row, len(rows))
	for i, r := range rows {
		out[i] = digest(map[string]any(r)).(map[string]any)
	}
	return out
}

// TestBuiltinTypesMatchCatalog: mapping knows built-in types by OID; the
// catalog must describe each the same way (name, kind, element type).
func TestBuiltinTypesMatchCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	conn := pgConn(t, pg)
	for _, oid := range mapping.BuiltinOIDs() {
		want := mapping.Builtin(oid, -1)
		got, err := replication.DescribeType(ctx, conn, oid, -1, 0)
		if err != nil {
			t.Errorf("describe %d (%s): %v", oid, want.Name, err)
			continue
		}
		if got.Name != want.Name || got.Schema != want.Schema || got.Kind != want.Kind || got.Dims != want.Dims || got.Delim != want.Delim {
			t.Errorf("oid %d: catalog says %s.%s kind %c dims %d delim %q, mapping says %s.%s kind %c dims %d delim %q",
				oid, got.Schema, got.Name, got.Kind, got.Dims, got.Delim, want.Schema, want.Name, want.Kind, want.Dims, want.Delim)
			continue
		}
		if (got.Elem == nil) != (want.Elem == nil) || (got.Elem != nil && got.Elem.OID != want.Elem.OID) {
			t.Errorf("oid %d (%s): element types differ", oid, want.Name)
		}
	}
	// And the other way: every mapped built-in base type is in the table.
	rows, err := conn.Query(ctx, `SELECT oid, typname FROM pg_type WHERE typnamespace = 'pg_catalog'::regnamespace AND typtype IN ('b', 'r', 'm')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var oid uint32
		var name string
		if err := rows.Scan(&oid, &name); err != nil {
			t.Fatal(err)
		}
		if mapping.Builtin(oid, -1) != nil {
			continue
		}
		if _, err := mapping.For("pg_catalog.t", mapping.Column{Name: name, TypeOID: oid, TypeMod: -1, Type: &mapping.Type{OID: oid, Schema: "pg_catalog", Name: name, Kind: mapping.KindBase, Mod: -1}}); err == nil {
			t.Errorf("built-in type %s (oid %d) is mapped but mapping.Builtin does not know it", name, oid)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestPreflightTypes: preflight describes each column's type from the
// catalog (arrays with their declared dimensions, domains, composites,
// enums, extension types), and fails, naming schema.table.column, on a type
// with no mapping or a key column that would not be a single value.
func TestPreflightTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{})
	conn := pgConn(t, pg)
	if err := pg.Exec(ctx, `
		CREATE EXTENSION hstore;
		CREATE EXTENSION citext;
		CREATE TYPE mood AS ENUM ('a');
		CREATE DOMAIN price AS numeric(10,2);
		CREATE DOMAIN grid AS int[][];
		CREATE TYPE pair AS (k text, v price, tags text[][]);
		CREATE TABLE good (id int PRIMARY KEY, m mood, p price, g grid, pr pair, prs pair[], h hstore, ci citext, ints int[][][], gs grid[]);
		CREATE TYPE shape AS (name text, at point);
		CREATE TABLE bad (id int PRIMARY KEY, s shape, boxes box[], ok text);
		CREATE TABLE badkey (iv interval PRIMARY KEY, v text);
		CREATE PUBLICATION good_pub FOR TABLE good;
		CREATE PUBLICATION bad_pub FOR TABLE bad, badkey;`); err != nil {
		t.Fatal(err)
	}
	rels, err := replication.Preflight(ctx, conn, "good_pub", nil)
	if err != nil {
		t.Fatalf("preflight of good_pub: %v", err)
	}
	want := map[string]string{
		"id":   "int",
		"m":    "string",
		"p":    "decimal(10, 2)",
		"g":    "list<list<int>>",
		"pr":   "struct<k: optional string, v: optional decimal(10, 2), tags: optional list<list<string>>>",
		"prs":  "list<struct<k: optional string, v: optional decimal(10, 2), tags: optional list<list<string>>>>",
		"h":    "map<string, string>",
		"ci":   "string",
		"ints": "list<list<list<int>>>",
		"gs":   "list<list<list<int>>>",
	}
	for _, c := range rels[0].Columns {
		if c.Type == nil {
			t.Errorf("column %s has no type description", c.Name)
			continue
		}
		typ, err := mapping.For("public.good", mapping.Column{Name: c.Name, TypeOID: c.TypeOID, TypeMod: c.TypeMod, TypeName: c.TypeName, Type: c.Type})
		if err != nil {
			t.Errorf("column %s: %v", c.Name, err)
			continue
		}
		if got := stripIDs(typ.String()); got != want[c.Name] {
			t.Errorf("column %s (%s) maps to %s, want %s", c.Name, c.TypeName, got, want[c.Name])
		}
	}
	if h := rels[0].Columns[6].Type; h.Extension != "hstore" {
		t.Errorf("hstore's extension = %q, want hstore", h.Extension)
	}

	_, err = replication.Preflight(ctx, conn, "bad_pub", nil)
	if err == nil {
		t.Fatal("preflight of bad_pub succeeded, want type errors")
	}
	msg := err.Error()
	for _, w := range []string{
		"public.bad.s: type shape has no Iceberg mapping (field at has type point)",
		"public.bad.boxes: type box[] has no Iceberg mapping (element has type box)",
		`BEGIN; ALTER PUBLICATION "bad_pub" DROP TABLE "public"."bad"; ALTER PUBLICATION "bad_pub" ADD TABLE "public"."bad" ("id", "ok"); COMMIT;`,
		"rules: [{column: public.bad.s, to: exclude}]",
		"public.badkey.iv is part of the key",
		"REPLICA IDENTITY USING INDEX",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("preflight error does not say %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "public.bad.ok") || strings.Contains(msg, "public.bad.id") {
		t.Errorf("preflight error names a column that maps:\n%s", msg)
	}
	// The statements the error gives are the fix: run them, and preflight
	// no longer finds anything wrong with public.bad.
	fix := strings.TrimSpace(lastLine(msg, "BEGIN; ALTER PUBLICATION"))
	if _, err := conn.Exec(ctx, fix); err != nil {
		t.Fatalf("the fix the error gives, %s: %v", fix, err)
	}
	if _, err = replication.Preflight(ctx, conn, "bad_pub", nil); err == nil || strings.Contains(err.Error(), "public.bad.") {
		t.Errorf("preflight after the fix: %v, want only public.badkey's error", err)
	}
}

// stripIDs removes "N: " field IDs from an Iceberg type's text.
func stripIDs(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j > i && j+1 < len(s) && s[j] == ':' && s[j+1] == ' ' && (i == 0 || s[i-1] == '<' || s[i-1] == ' ') {
			i = j + 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// A table whose every column has a type with a binary form the bridge reads
// is copied with COPY (FORMAT binary): its edge values (NaN and infinite
// floats, BC dates and timestamps, negative-scale and tiny numerics,
// trailing blanks of char(n), empty strings and bytea, 1.75 MB of text)
// read back as after a text copy, and the stream's changes find the copied
// rows by key.
func TestTypeMatrixBinaryCopy(t *testing.T) {
	t.Parallel()
	binary := map[string]bool{"c_bool": true, "c_int2": true, "c_int4": true, "c_int8": true, "c_float4": true, "c_float8": true,
		"c_num_10_2": true, "c_num_38_10": true, "c_num_neg": true, "c_num_tiny": true, "c_text": true, "c_varchar": true,
		"c_bpchar": true, "c_bytea": true, "c_uuid": true, "c_date": true, "c_ts": true, "c_tstz": true}
	m := startTypeMatrixOf(t, func(name string) bool { return binary[name] }, nil)
	if len(m.cols) != len(binary)+1 {
		t.Fatalf("%d columns kept, want %d", len(m.cols), len(binary)+1)
	}
	waitCaughtUp(t, m.conn, typesSlot, m.b)
	if line := lastLine(m.b.log(), `msg="copy started" table=types.matrix`); !strings.Contains(line, "format=binary") {
		t.Fatalf("the copy did not use the binary format: %s", line)
	}
	compareTypeMatrix(t, m.tg, m.conn, m.cols, "after a binary copy")
	others := strings.Join(m.names[1:], ", ")
	exec1(t, m.conn, fmt.Sprintf("UPDATE types.matrix SET (%s) = (SELECT %s FROM types.matrix WHERE id = 2) WHERE id = 1", others, others))
	exec1(t, m.conn, "UPDATE types.matrix SET id = 30 WHERE id = 3")
	exec1(t, m.conn, "DELETE FROM types.matrix WHERE id = 4")
	waitCaughtUp(t, m.conn, typesSlot, m.b)
	m.b.stop(t)
	compareTypeMatrix(t, m.tg, m.conn, m.cols, "after the stream changed copied rows")
}
