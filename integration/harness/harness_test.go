package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := StartPostgresT(t, PostgresOptions{Settings: map[string]string{"application_name": "harness test"}})

	fi, err := os.Stat(p.DataDir)
	if err != nil {
		t.Fatalf("stat data dir: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir mode = %o, want 700", perm)
	}

	if err := p.Exec(ctx, "create database app"); err != nil {
		t.Fatal(err)
	}
	if err := p.ExecDB(ctx, "app", "create table t (id int primary key, v text); insert into t values (1, 'a'), (2, 'b')"); err != nil {
		t.Fatal(err)
	}
	if err := p.ExecDB(ctx, "app", "insert into t values ($1, $2)", 3, "c"); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, p.SuperURL("app"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	checks := map[string]string{
		"show wal_level":               "logical",
		"show max_replication_slots":   "10",
		"show max_wal_senders":         "10",
		"show listen_addresses":        "127.0.0.1",
		"show application_name":        "harness test",
		"select count(*)::text from t": "3",
	}
	for q, want := range checks {
		var got string
		if err := conn.QueryRow(ctx, q).Scan(&got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}

	// A replication connection (what pg2iceberg opens) is accepted.
	repl, err := pgx.Connect(ctx, p.SuperURL("app")+"&replication=database")
	if err != nil {
		t.Fatalf("replication connect: %v", err)
	}
	_ = repl.Close(ctx)

	// A wrong password is refused (pg_hba uses scram-sha-256).
	if c, err := pgx.Connect(ctx, p.URL("postgres", "wrong", "app")); err == nil {
		_ = c.Close(ctx)
		t.Error("connect with a wrong password succeeded")
	}

	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(p.DataDir); !os.IsNotExist(err) {
		t.Errorf("data dir still exists after stop: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestPostgresBadSetting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := StartPostgres(ctx, PostgresOptions{Settings: map[string]string{"no_such_setting": "1"}})
	if err == nil {
		_ = p.Stop()
		t.Fatal("start with an unknown setting succeeded")
	}
	if !strings.Contains(err.Error(), "no_such_setting") {
		t.Errorf("error does not show the server log: %v", err)
	}
}

func TestS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := StartS3T(t)
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") || s.Region != "us-east-1" || s.AccessKey == "" || s.SecretKey == "" {
		t.Fatalf("unexpected gateway fields: endpoint %q region %q", s.Endpoint, s.Region)
	}
	if err := s.CreateBucket(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	want := []byte("hello iceberg\n")
	if err := s.PutObject(ctx, "warehouse", "ns/tbl/metadata/v1.json", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetObject(ctx, "warehouse", "ns/tbl/metadata/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The posix backend stores objects as plain files under Dir.
	onDisk, err := os.ReadFile(filepath.Join(s.Dir, "warehouse", "ns", "tbl", "metadata", "v1.json"))
	if err != nil || string(onDisk) != string(want) {
		t.Errorf("object on disk = %q, %v", onDisk, err)
	}
	if _, err := s.GetObject(ctx, "warehouse", "missing"); err == nil {
		t.Error("get of a missing object succeeded")
	}
	if err := s.CreateBucket(ctx, "Bad_Name"); err == nil {
		t.Error("create of an invalid bucket name succeeded")
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("s3 dir still exists after stop: %v", err)
	}
}
