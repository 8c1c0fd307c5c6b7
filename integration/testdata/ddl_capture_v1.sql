-- The DDL capture as pg2iceberg setup installed it before events were signed.
CREATE SCHEMA IF NOT EXISTS pg2iceberg;

CREATE OR REPLACE FUNCTION pg2iceberg.emit_ddl() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT DISTINCT d.objid, d.command_tag FROM pg_event_trigger_ddl_commands() d
           WHERE d.classid = 'pg_class'::regclass AND d.object_type IN ('table', 'table column')
  LOOP
    PERFORM pg_logical_emit_message(true, 'pg2iceberg.ddl', json_build_object(
      'relid', r.objid::bigint,
      'tag', r.command_tag,
      'schema', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = r.objid),
      'table', (SELECT c.relname FROM pg_class c WHERE c.oid = r.objid),
      'columns', (SELECT json_agg(json_build_object('attnum', a.attnum, 'name', a.attname, 'type_oid', a.atttypid::bigint,
                                                    'typmod', a.atttypmod, 'not_null', a.attnotnull,
                                                    'generated', a.attgenerated <> '',
                                                    'key', a.attnum = ANY(k.cols)) ORDER BY a.attnum)
                  FROM pg_attribute a,
                       -- the mirror's key as preflight chooses it, when an index gives it: the
                       -- primary key, else the replica identity index
                       LATERAL (SELECT COALESCE(
                         (SELECT i.indkey::int2[] FROM pg_index i WHERE i.indrelid = r.objid AND i.indisprimary),
                         (SELECT i.indkey::int2[] FROM pg_index i WHERE i.indrelid = r.objid AND i.indisreplident),
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
    PERFORM pg_logical_emit_message(true, 'pg2iceberg.ddl', json_build_object(
      'relid', r.objid::bigint, 'tag', 'DROP TABLE', 'schema', r.schema_name, 'table', r.object_name)::text);
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS pg2iceberg_drop;
CREATE EVENT TRIGGER pg2iceberg_drop ON sql_drop
  WHEN TAG IN ('DROP TABLE')
  EXECUTE FUNCTION pg2iceberg.emit_drop();
