-- The compose stack's bridge role and catalog database, run by the postgres
-- image's entrypoint after shop.sql (20-pg2iceberg.sql), connected to
-- POSTGRES_DB=shop as the superuser, when its data volume is empty.
-- integration/compose_test.go runs both files the same way against the test
-- harness's server.

-- The bridge's role: LOGIN and REPLICATION, SELECT on the published tables
-- (README "Prepare PostgreSQL"). The password is the stack's demo password,
-- given to the bridge as PGPASSWORD in docker-compose.yml: change both for
-- anything but a demo.
CREATE ROLE pg2iceberg WITH LOGIN REPLICATION PASSWORD 'pg2iceberg-demo';
GRANT USAGE ON SCHEMA shop TO pg2iceberg;
GRANT SELECT ON shop.customers, shop.orders TO pg2iceberg;

-- The catalog's own database, owned by the bridge's role, which creates the
-- catalog tables (iceberg_tables, iceberg_namespace_properties) in it at its
-- first start. Logical decoding is per database, so the catalog's writes
-- never reach the slot on shop.
CREATE DATABASE lake OWNER pg2iceberg;
