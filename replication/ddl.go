package replication

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// DDLPrefix is the logical message prefix of captured DDL events.
const DDLPrefix = "pg2iceberg.ddl"

// CaptureSchema holds the DDL capture's own objects, its key among them:
// never mirrored, even by a FOR ALL TABLES publication.
const CaptureSchema = "pg2iceberg"

// SetupSQL installs the DDL capture: an event trigger that, at the end of
// each DDL command on a table, emits a transactional logical message
// (pg_logical_emit_message) with the table's columns and their attnums,
// and one that emits a message for each dropped table (DROP TABLE).
// The message travels in the WAL inside the DDL's transaction, so the
// bridge sees a schema change when it commits, before any row change, and
// tells a rename (same attnum, new name) from a drop and an add.
//
// Any role may emit a logical message, so each event is signed: HMAC-SHA-256
// (RFC 2104, built from sha256()) with a key in pg2iceberg.secret over the
// prefix, the top-level transaction id and the body (see signedInput). Only
// the superuser that owns the trigger functions (SECURITY DEFINER) and the
// roles granted SELECT (GrantSQL: the bridge's) can read the key, and the
// helper that signs is not executable by PUBLIC. Running it again upgrades
// an older capture and keeps the key.
const SetupSQL = `CREATE SCHEMA IF NOT EXISTS pg2iceberg;

DO $chk$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
             WHERE n.nspname = 'pg2iceberg' AND NOT r.rolsuper) THEN
    RAISE EXCEPTION 'schema pg2iceberg belongs to a role that is not a superuser, which could replace the DDL capture''s key: drop it (DROP SCHEMA pg2iceberg CASCADE) and run pg2iceberg setup again';
  END IF;
END
$chk$;
REVOKE ALL ON SCHEMA pg2iceberg FROM PUBLIC;

-- The key the trigger signs each DDL event with. 244 random bits (two
-- version 4 UUIDs); kept when the capture is installed again.
CREATE TABLE IF NOT EXISTS pg2iceberg.secret (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  key bytea NOT NULL CHECK (length(key) = 32)
);
REVOKE ALL ON pg2iceberg.secret FROM PUBLIC;
INSERT INTO pg2iceberg.secret (key)
  SELECT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
  ON CONFLICT DO NOTHING;

-- emit_signed emits body as a DDL event, signed for the current top-level
-- transaction: 'sig:' || hex(HMAC-SHA-256(key, '` + DDLPrefix + ` ' || xid || E'\n' || body)) || E'\n' || body.
CREATE OR REPLACE FUNCTION pg2iceberg.emit_signed(body text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  k bytea;
  ipad bytea;
  opad bytea;
  msg bytea := convert_to(body, 'UTF8');
BEGIN
  SELECT s.key INTO k FROM pg2iceberg.secret s;
  IF k IS NULL THEN
    RAISE WARNING 'pg2iceberg.secret holds no key: DDL event not sent (run pg2iceberg setup again)';
    RETURN;
  END IF;
  k := k || decode(repeat('00', 64 - length(k)), 'hex');
  ipad := k;
  opad := k;
  FOR i IN 0..63 LOOP
    ipad := set_byte(ipad, i, get_byte(k, i) # 54);
    opad := set_byte(opad, i, get_byte(k, i) # 92);
  END LOOP;
  PERFORM pg_logical_emit_message(true, '` + DDLPrefix + `',
    convert_to('sig:' || encode(sha256(opad || sha256(ipad ||
      convert_to('` + DDLPrefix + ` ' || (txid_current() % 4294967296)::text || E'\n', 'UTF8') || msg)), 'hex') || E'\n', 'UTF8') || msg);
END
$fn$;
REVOKE ALL ON FUNCTION pg2iceberg.emit_signed(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION pg2iceberg.emit_ddl() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT DISTINCT d.objid, d.command_tag FROM pg_event_trigger_ddl_commands() d
           WHERE d.classid = 'pg_class'::regclass AND d.object_type IN ('table', 'table column')
  LOOP
    PERFORM pg2iceberg.emit_signed(json_build_object(
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
REVOKE ALL ON FUNCTION pg2iceberg.emit_ddl() FROM PUBLIC;

DROP EVENT TRIGGER IF EXISTS pg2iceberg_ddl;
CREATE EVENT TRIGGER pg2iceberg_ddl ON ddl_command_end
  WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
  EXECUTE FUNCTION pg2iceberg.emit_ddl();

CREATE OR REPLACE FUNCTION pg2iceberg.emit_drop() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT d.objid, d.schema_name, d.object_name FROM pg_event_trigger_dropped_objects() d
           WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'table' AND d.objsubid = 0
  LOOP
    PERFORM pg2iceberg.emit_signed(json_build_object(
      'relid', r.objid::bigint, 'tag', 'DROP TABLE', 'schema', r.schema_name, 'table', r.object_name)::text);
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION pg2iceberg.emit_drop() FROM PUBLIC;

DROP EVENT TRIGGER IF EXISTS pg2iceberg_drop;
CREATE EVENT TRIGGER pg2iceberg_drop ON sql_drop
  WHEN TAG IN ('DROP TABLE')
  EXECUTE FUNCTION pg2iceberg.emit_drop();
`

// GrantSQL lets role (the bridge's, when it is not a superuser) read the
// key DDL events are signed with.
func GrantSQL(role string) string {
	r := decode.QuoteIdent(role)
	return "GRANT USAGE ON SCHEMA pg2iceberg TO " + r + ";\nGRANT SELECT ON pg2iceberg.secret TO " + r + ";\n"
}

// UninstallSQL removes the DDL capture, its key included.
const UninstallSQL = `DROP EVENT TRIGGER IF EXISTS pg2iceberg_ddl;
DROP EVENT TRIGGER IF EXISTS pg2iceberg_drop;
DROP FUNCTION IF EXISTS pg2iceberg.emit_ddl();
DROP FUNCTION IF EXISTS pg2iceberg.emit_drop();
DROP FUNCTION IF EXISTS pg2iceberg.emit_signed(text);
DROP TABLE IF EXISTS pg2iceberg.secret;
DROP SCHEMA IF EXISTS pg2iceberg;
`

// Setup installs (or with uninstall removes) the DDL capture, and grants
// grantTo (when not empty) what the bridge needs to read its key. It needs
// a superuser: event triggers can only be created by one.
func Setup(ctx context.Context, conn *pgx.Conn, uninstall bool, grantTo string) error {
	sql := SetupSQL
	if uninstall {
		sql = UninstallSQL
	} else if grantTo != "" {
		sql += GrantSQL(grantTo)
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
