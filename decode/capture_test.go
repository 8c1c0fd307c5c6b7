package decode_test

// This file refreshes testdata/*.bin: real pgoutput messages captured from a
// throwaway PostgreSQL server. It only runs with -capture:
//
//	go test ./decode -run TestCapture -capture -v
//	go test ./decode -update   # then refresh the .golden files
//
// Each .bin file is the XLogData payloads of one scenario, in the order the
// server sent them, each preceded by its length (uint32, big endian).

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

var capture = flag.Bool("capture", false, "capture testdata/*.bin from a throwaway PostgreSQL server (needs PostgreSQL binaries)")

// fencePrefix marks the non-transactional logical message that ends a
// scenario's capture; it is not written to the .bin file.
const fencePrefix = "capture-fence"

// captureSetup creates the tables and the publication. It runs before any
// slot exists, so none of it is captured.
const captureSetup = `
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE basic (
	id int PRIMARY KEY,
	small smallint,
	big bigint,
	price numeric(10,2),
	amount numeric,
	ratio real,
	score double precision,
	flag boolean,
	name varchar(20),
	code char(3),
	note text,
	payload bytea,
	doc jsonb,
	uid uuid,
	day date,
	at time,
	ts timestamp,
	tstz timestamptz,
	m mood
);
CREATE TABLE by_index (a int NOT NULL, b int NOT NULL, c text, UNIQUE (a, b));
ALTER TABLE by_index REPLICA IDENTITY USING INDEX by_index_a_b_key;
CREATE TABLE full_ident (id int PRIMARY KEY, v text, n int);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
CREATE TABLE toasty (id int PRIMARY KEY, note text, big text);
CREATE TABLE toasty_full (id int PRIMARY KEY, note text, big text);
ALTER TABLE toasty_full REPLICA IDENTITY FULL;
CREATE TABLE parent (id int PRIMARY KEY);
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent);
CREATE TABLE seq_t (id serial PRIMARY KEY, v text);
CREATE TABLE streamed (id int PRIMARY KEY, pad text);
CREATE PUBLICATION pub FOR ALL TABLES;
SELECT pg_replication_origin_create('upstream');
`

// randomText is an incompressible ~8kB text value, so PostgreSQL stores it
// out of line (TOAST) rather than compressing it inline.
const randomText = `(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 256))`

type captureScenario struct {
	name string
	// statements run one by one on one connection (so session state such as
	// a replication origin carries over).
	sql []string
}

var captureScenarios = []captureScenario{
	{name: "dml", sql: []string{
		`INSERT INTO basic VALUES (1, -32768, 9223372036854775807, 12345678.90, 'NaN', 1.5, 0.1, true,
			'häagen', 'ab', E'tab\there\nnewline "quoted" \\ back', '\x00ff10', '{"a": [1, 2.5, null]}',
			'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '0001-12-31 BC', '24:00:00', '2000-02-29 12:34:56.789',
			'1999-12-31 23:59:59.999999+05:30', 'happy')`,
		`INSERT INTO basic (id) VALUES (2)`,
		`INSERT INTO basic (id, amount, ratio, score, day, ts, tstz) VALUES
			(3, '-0.000000000000000000000000000000000000000012345', 'Infinity', '-Infinity', 'infinity', '-infinity', '10000-01-01 00:00:00+00')`,
		`UPDATE basic SET note = 'changed', m = 'sad' WHERE id = 1`,
		`UPDATE basic SET id = 20 WHERE id = 2`,
		`DELETE FROM basic WHERE id = 20`,
		`BEGIN`,
		`INSERT INTO basic (id, note) VALUES (4, 'in a transaction')`,
		`UPDATE basic SET note = NULL WHERE id = 4`,
		`DELETE FROM basic WHERE id = 4`,
		`COMMIT`,
		`INSERT INTO by_index VALUES (1, 2, 'x')`,
		`UPDATE by_index SET c = 'y'`,
		`UPDATE by_index SET a = 5, c = 'z'`,
		`DELETE FROM by_index`,
		`ALTER TABLE basic ADD COLUMN extra int`,
		`INSERT INTO basic (id, extra) VALUES (5, 42)`,
	}},
	{name: "full", sql: []string{
		`INSERT INTO full_ident VALUES (1, 'one', 1), (2, NULL, 2)`,
		`UPDATE full_ident SET v = 'uno' WHERE id = 1`,
		`UPDATE full_ident SET id = 3, n = NULL WHERE id = 2`,
		`DELETE FROM full_ident WHERE id = 1`,
	}},
	{name: "truncate", sql: []string{
		`INSERT INTO parent VALUES (1)`,
		`INSERT INTO child VALUES (1, 1)`,
		`INSERT INTO seq_t (v) VALUES ('a')`,
		`TRUNCATE full_ident`,
		`TRUNCATE parent CASCADE`,
		`TRUNCATE seq_t, basic RESTART IDENTITY`,
	}},
	{name: "toast", sql: []string{
		`INSERT INTO toasty VALUES (1, 'first', ` + randomText + `)`,
		`UPDATE toasty SET note = 'second' WHERE id = 1`,
		`UPDATE toasty SET id = 2 WHERE id = 1`,
		`UPDATE toasty SET big = 'small now' WHERE id = 2`,
		`DELETE FROM toasty WHERE id = 2`,
		`INSERT INTO toasty_full VALUES (1, 'first', ` + randomText + `)`,
		`UPDATE toasty_full SET note = 'second' WHERE id = 1`,
		`DELETE FROM toasty_full WHERE id = 1`,
	}},
	{name: "message", sql: []string{
		`SELECT pg_logical_emit_message(false, 'pg2iceberg-ddl', '{"event": "non-transactional"}')`,
		`BEGIN`,
		`INSERT INTO full_ident VALUES (10, 'with message', 10)`,
		`SELECT pg_logical_emit_message(true, 'pg2iceberg', 'transactional')`,
		`SELECT pg_logical_emit_message(true, 'pg2iceberg-bin', '\x00ff00'::bytea)`,
		`COMMIT`,
		`BEGIN`,
		`SELECT pg_logical_emit_message(true, '', '')`,
		`COMMIT`,
	}},
	{name: "origin", sql: []string{
		`SELECT pg_replication_origin_session_setup('upstream')`,
		`INSERT INTO full_ident VALUES (20, 'from upstream', 20)`,
		`SELECT pg_replication_origin_session_reset()`,
	}},
	{name: "stream", sql: []string{
		// Over logical_decoding_work_mem (64kB): sent as stream segments.
		`BEGIN`,
		`INSERT INTO streamed SELECT i, repeat(chr(97 + i % 26), 500) FROM generate_series(1, 110) i`,
		`UPDATE streamed SET pad = 'short' WHERE id <= 3`,
		`UPDATE streamed SET id = 1000 WHERE id = 4`,
		`DELETE FROM streamed WHERE id = 5`,
		`SELECT pg_logical_emit_message(true, 'pg2iceberg', 'inside a streamed transaction')`,
		`INSERT INTO streamed SELECT i, repeat('z', 500) FROM generate_series(111, 150) i`,
		`TRUNCATE full_ident`,
		`COMMIT`,
	}},
	{name: "stream_abort", sql: []string{
		// A subtransaction whose streamed changes are rolled back, then a
		// whole streamed transaction that is rolled back.
		`BEGIN`,
		`INSERT INTO streamed SELECT i, repeat('a', 500) FROM generate_series(1001, 1040) i`,
		`SAVEPOINT sp`,
		`INSERT INTO streamed SELECT i, repeat('b', 500) FROM generate_series(1041, 1120) i`,
		`ROLLBACK TO SAVEPOINT sp`,
		`INSERT INTO streamed SELECT i, repeat('c', 500) FROM generate_series(1121, 1140) i`,
		`COMMIT`,
		`BEGIN`,
		`INSERT INTO streamed SELECT i, repeat('d', 500) FROM generate_series(2001, 2120) i`,
		`ROLLBACK`,
		`INSERT INTO streamed VALUES (3000, 'after the abort')`,
	}},
	{name: "stream_ddl", sql: []string{
		// The table changes shape inside a streamed transaction: the new
		// relation message arrives inside a later segment.
		`CREATE TABLE stream_ddl (id int PRIMARY KEY, pad text)`,
		`BEGIN`,
		`INSERT INTO stream_ddl SELECT i, repeat('e', 500) FROM generate_series(1, 110) i`,
		`ALTER TABLE stream_ddl ADD COLUMN extra int`,
		`INSERT INTO stream_ddl SELECT i, repeat('f', 500), i FROM generate_series(111, 120) i`,
		`COMMIT`,
		`INSERT INTO stream_ddl VALUES (121, 'after', 121)`,
	}},
}

func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to refresh testdata/*.bin from a throwaway PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pg := harness.StartPostgresT(t, harness.PostgresOptions{Settings: map[string]string{
		"logical_decoding_work_mem": "64kB",
	}})
	if err := pg.Exec(ctx, captureSetup); err != nil {
		t.Fatal(err)
	}
	for _, sc := range captureScenarios {
		t.Run(sc.name, func(t *testing.T) {
			msgs := captureOne(ctx, t, pg, sc)
			var buf bytes.Buffer
			for _, m := range msgs {
				var n [4]byte
				binary.BigEndian.PutUint32(n[:], uint32(len(m)))
				buf.Write(n[:])
				buf.Write(m)
			}
			path := filepath.Join("testdata", sc.name+".bin")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %d messages (%d bytes) to %s", len(msgs), buf.Len(), path)
		})
	}
}

// replicationConfig is a replication connection with the session settings
// the bridge uses (see package mapping), which shape the text values.
func replicationConfig(t *testing.T, pg *harness.Postgres) *pgconn.Config {
	t.Helper()
	cfg, err := pgconn.ParseConfig(pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"replication":        "database",
		"DateStyle":          "ISO, YMD",
		"TimeZone":           "UTC",
		"IntervalStyle":      "postgres",
		"extra_float_digits": "3",
		"bytea_output":       "hex",
	} {
		cfg.RuntimeParams[k] = v
	}
	return cfg
}

func captureOne(ctx context.Context, t *testing.T, pg *harness.Postgres, sc captureScenario) [][]byte {
	t.Helper()
	repl, err := pgconn.ConnectConfig(ctx, replicationConfig(t, pg))
	if err != nil {
		t.Fatalf("replication connect: %v", err)
	}
	defer repl.Close(context.Background())
	slotName := "capture_" + sc.name
	slot, err := pglogrepl.CreateReplicationSlot(ctx, repl, slotName, "pgoutput", pglogrepl.CreateReplicationSlotOptions{
		Temporary: true, SnapshotAction: "NOEXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication,
	})
	if err != nil {
		t.Fatalf("create slot: %v", err)
	}
	start, err := pglogrepl.ParseLSN(slot.ConsistentPoint)
	if err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, pg.SuperURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range sc.sql {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `SELECT pg_logical_emit_message(false, $1, '')`, fencePrefix); err != nil {
		t.Fatal(err)
	}

	err = pglogrepl.StartReplication(ctx, repl, slotName, start, pglogrepl.StartReplicationOptions{PluginArgs: []string{
		"proto_version '2'",
		"publication_names 'pub'",
		"messages 'true'",
		"streaming 'on'",
	}})
	if err != nil {
		t.Fatalf("start replication: %v", err)
	}
	var msgs [][]byte
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no fence message after %d messages", len(msgs))
		}
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		raw, err := repl.ReceiveMessage(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("receive: %v (after %d messages)", err, len(msgs))
		}
		cd, ok := raw.(*pgproto3.CopyData)
		if !ok {
			t.Fatalf("unexpected %T: %+v", raw, raw)
		}
		switch cd.Data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			k, err := pglogrepl.ParsePrimaryKeepaliveMessage(cd.Data[1:])
			if err != nil {
				t.Fatal(err)
			}
			if k.ReplyRequested {
				_ = pglogrepl.SendStandbyStatusUpdate(ctx, repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: start})
			}
		case pglogrepl.XLogDataByteID:
			x, err := pglogrepl.ParseXLogData(cd.Data[1:])
			if err != nil {
				t.Fatal(err)
			}
			if isFence(x.WALData) {
				return msgs
			}
			msgs = append(msgs, bytes.Clone(x.WALData))
		default:
			t.Fatalf("unexpected copy data %q", cd.Data[0])
		}
	}
}

// isFence reports whether a payload is the non-transactional fence message:
// 'M', flags 0, LSN, prefix.
func isFence(data []byte) bool {
	return len(data) > 10 && data[0] == 'M' && data[1] == 0 &&
		strings.HasPrefix(string(data[10:]), fencePrefix+"\x00")
}
