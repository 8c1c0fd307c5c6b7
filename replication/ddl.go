package replication

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DDLPrefix is the logical message prefix of captured DDL events.
const DDLPrefix = "pg2iceberg.ddl"

// SetupSQL installs the DDL capture: an event trigger that, at the end of
// each DDL command on a table, emits a transactional logical message
// (pg_logical_emit_message) with the table's columns and their attnums,
// and one that emits a message for each dropped table (DROP TABLE).
// The message travels in the WAL inside the DDL's transaction, so the
// bridge sees a schema change when it commits, before any row change, and
// tells a rename (same attnum, new name) from a drop and an add.
const SetupSQL = `CREATE SCHEMA IF NOT EXISTS pg2iceberg;

CREATE OR REPLACE FUNCTION pg2iceberg.emit_ddl() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT DISTINCT d.objid, d.command_tag FROM pg_event_trigger_ddl_commands() d
           WHERE d.classid = 'pg_class'::regclass AND d.object_type IN ('table', 'table column')
  LOOP
    PERFORM pg_logical_emit_message(true, '` + DDLPrefix + `', json_build_object(
      'relid', r.objid::bigint,
      'tag', r.command_tag,
      'schema', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = r.objid),
      'table', (SELECT c.relname FROM pg_class c WHERE c.oid = r.objid),
      -- REPLICA IDENTITY FULL without a primary key that is not deferrable:
      -- the mirror is kept by the whole row
      'whole_row', (SELECT c.relreplident = 'f' AND NOT EXISTS (SELECT 1 FROM pg_index i
                      WHERE i.indrelid = c.oid AND i.indisprimary AND i.indimmediate)
                    FROM pg_class c WHERE c.oid = r.objid),
      'columns', (SELECT json_agg(json_build_object('attnum', a.attnum, 'name', a.attname, 'type_oid', a.atttypid::bigint,
                                                    'typmod', a.atttypmod, 'not_null', a.attnotnull,
                                                    'generated', a.attgenerated <> '',
                                                    'key', a.attnum = ANY(k.cols)) ORDER BY a.attnum)
                  FROM pg_attribute a,
                       -- the mirror's key as preflight chooses it, when an index gives it: the
                       -- replica identity index, else the primary key (under FULL only one
                       -- that is not deferrable)
                       LATERAL (SELECT COALESCE(
                         (SELECT i.indkey::int2[] FROM pg_index i WHERE i.indrelid = r.objid AND i.indisreplident),
                         (SELECT i.indkey::int2[] FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                          WHERE i.indrelid = r.objid AND i.indisprimary
                            AND (c.relreplident = 'd' OR c.relreplident = 'f' AND i.indimmediate)),
                         '{}'::int2[]) AS cols) k
                  WHERE a.attrelid = r.objid AND a.attnum > 0 AND NOT a.attisdropped)
    )::text);
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS pg2iceberg_ddl;
CREATE EVENT TRIGGER pg2iceberg_ddl ON ddl_command_end
  WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
  EXECUTE FUNCTION pg2iceberg.emit_ddl();

CREATE OR REPLACE FUNCTION pg2iceberg.emit_drop() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT d.objid, d.schema_name, d.object_name FROM pg_event_trigger_dropped_objects() d
           WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'table' AND d.objsubid = 0
  LOOP
    PERFORM pg_logical_emit_message(true, '` + DDLPrefix + `', json_build_object(
      'relid', r.objid::bigint, 'tag', 'DROP TABLE', 'schema', r.schema_name, 'table', r.object_name)::text);
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS pg2iceberg_drop;
CREATE EVENT TRIGGER pg2iceberg_drop ON sql_drop
  WHEN TAG IN ('DROP TABLE')
  EXECUTE FUNCTION pg2iceberg.emit_drop();
`

// UninstallSQL removes the DDL capture.
const UninstallSQL = `DROP EVENT TRIGGER IF EXISTS pg2iceberg_ddl;
DROP EVENT TRIGGER IF EXISTS pg2iceberg_drop;
DROP FUNCTION IF EXISTS pg2iceberg.emit_ddl();
DROP FUNCTION IF EXISTS pg2iceberg.emit_drop();
DROP SCHEMA IF EXISTS pg2iceberg;
`

// Setup installs (or with uninstall removes) the DDL capture. It needs a
// superuser: event triggers can only be created by one.
func Setup(ctx context.Context, conn *pgx.Conn, uninstall bool) error {
	sql := SetupSQL
	if uninstall {
		sql = UninstallSQL
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("install the DDL capture (run as a superuser, or apply the SQL of 'pg2iceberg setup --print' yourself): %w", err)
	}
	return nil
}

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// AttNums returns a table's live columns by attnum (as of conn's snapshot
// when it is a transaction).
func AttNums(ctx context.Context, conn querier, relID uint32) (map[int]string, error) {
	rows, err := conn.Query(ctx, `SELECT attnum, attname FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, relID)
	if err != nil {
		return nil, fmt.Errorf("read attnums of relation %d: %w", relID, err)
	}
	m := map[int]string{}
	for rows.Next() {
		var n int16
		var name string
		if err := rows.Scan(&n, &name); err != nil {
			return nil, fmt.Errorf("read attnums of relation %d: %w", relID, err)
		}
		m[int(n)] = name
	}
	return m, rows.Err()
}

// CaptureInstalled reports whether the DDL capture's event trigger is
// installed and enabled.
func CaptureInstalled(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_event_trigger WHERE evtname = 'pg2iceberg_ddl' AND evtenabled <> 'D'`).Scan(&n); err != nil {
		return false, fmt.Errorf("look for the DDL capture: %w", err)
	}
	return n > 0, nil
}
