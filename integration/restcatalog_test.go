package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startRESTFixture runs Apache Iceberg's own REST catalog server (the
// RESTCatalogServer of iceberg-open-api's test fixtures, what the official
// rest-fixture image runs; scripts/setup.sh fetches its classpath) over a
// JdbcCatalog in a SQLite file, writing the local warehouse wh, and
// returns its URI once GET /v1/config answers. Jetty binds every address;
// the test talks to it on loopback.
func startRESTFixture(t *testing.T, wh string) string {
	t.Helper()
	cp := filepath.Join(filepath.Dir(sparkJar(t)), "rest-fixture")
	if !fileExists(filepath.Join(cp, "iceberg-open-api-1.10.1-test-fixtures.jar")) {
		t.Fatalf("no REST fixture server in %s: run scripts/setup.sh", cp)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("java", "-Xmx384m", "-cp", filepath.Join(cp, "*"), "org.apache.iceberg.rest.RESTCatalogServer")
	cmd.Env = append(os.Environ(),
		"CATALOG_WAREHOUSE=file://"+mustAbs(t, wh),
		"CATALOG_URI=jdbc:sqlite:file:"+filepath.Join(t.TempDir(), "rest-catalog.db"),
		"CATALOG_REST_PORT="+strconv.Itoa(port))
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("REST fixture server log:\n%s", tail(out.log(), 30))
		}
	})
	uri := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("the REST fixture server exited; log:\n%s", tail(out.log(), 30))
		default:
		}
		if resp, err := http.Get(uri + "/v1/config"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return uri
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the REST fixture server did not answer within a minute; log:\n%s", tail(out.log(), 30))
	return ""
}

// The bridge writes through Apache Iceberg's REST catalog server
// (--catalog http://...), authenticating with OAuth2 client credentials
// (the fixture's token endpoint issues a token to any client; what it
// checks is that the flow runs): the copy, streaming, an ADD COLUMN and a
// restart, and iceberg-go, pyiceberg and Spark read through that server
// what Postgres holds.
func TestRESTCatalogWriteTarget(t *testing.T) {
	pg, conn := startSource(t, `CREATE TABLE items (id int PRIMARY KEY, v text, n int);
		INSERT INTO items SELECT g, 'v' || g, g FROM generate_series(1, 200) g;
		CREATE PUBLICATION rest_pub FOR TABLE items;`)
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	tg := target{name: "rest", warehouse: wh, catalog: startRESTFixture(t, wh)}
	const slot = "pg2iceberg_rest_pub"
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("fixture-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := runArgs(pg, "rest_pub", tg, "--rest-client-id", "bridge", "--rest-client-secret-file", secretFile)
	b := startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `UPDATE items SET v = 'up' WHERE id <= 20`)
	exec1(t, conn, `DELETE FROM items WHERE id > 190`)
	exec1(t, conn, `INSERT INTO items SELECT g, 'new', g FROM generate_series(201, 230) g`)
	waitCaughtUp(t, conn, slot, b)
	exec1(t, conn, `ALTER TABLE items ADD COLUMN extra text`)
	exec1(t, conn, `UPDATE items SET extra = 'x' || id WHERE id % 10 = 0`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)

	b = startBridge(t, nil, args...)
	waitSlot(t, conn, slot, b)
	exec1(t, conn, `UPDATE items SET n = -n, extra = 'after restart' WHERE id <= 5`)
	exec1(t, conn, `DELETE FROM items WHERE id BETWEEN 100 AND 109`)
	waitCaughtUp(t, conn, slot, b)
	b.stop(t)
	if strings.Contains(b.log(), "fixture-s3cret") {
		t.Errorf("the client secret is in the bridge's log")
	}

	const sel = "id, v, n, extra"
	want := pgRows(t, conn, sel, "items")
	if len(want) != 210 {
		t.Fatalf("Postgres holds %d rows, want 210 (200 - 10 + 30 - 10)", len(want))
	}
	compareRows(t, "iceberg-go via REST", "public.items", "id", icegoRows(t, tg, "public.items"), want)
	compareRows(t, "pyiceberg via REST", "public.items", "id", pyicebergRows(t, tg, "public.items"), want)
	spark := startSpark(t, tg.catalog, "", sparkJar(t))
	got, ok := spark.dump(t, "SELECT "+sel+" FROM pg.public.items")
	if ok {
		compareRows(t, "Spark via REST", "public.items", "id", got, want)
	}
	// The changelog holds the streamed changes (the copy is not in it): 20
	// updates + 10 deletes + 30 inserts + 22 updates (id % 10 = 0 among
	// 1..190 and 201..230) + 5 updates + 10 deletes.
	if n := len(icegoRows(t, tg, "public.items__changelog")); n != 97 {
		t.Errorf("changelog through REST: %d rows, want 97", n)
	}
}
