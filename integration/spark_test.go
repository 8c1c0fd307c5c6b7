package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests that read with Spark SQL share one JVM (readers/spark_session.py,
// started by the first of them and stopped by TestMain), each with a Spark
// session of its own attached to its own catalog: a JVM takes about 20 s of
// CPU to start, a session none.

// sparkVersion is the pyspark that scripts/setup.sh installs, with the
// iceberg-spark-runtime jar it links at <cache>/jars/iceberg-spark-runtime.jar.
const sparkVersion = "3.5"

// cacheDir is where scripts/setup.sh puts what it fetches:
// $PG2ICEBERG_CACHE_DIR, or pg2iceberg in the user's cache directory.
func cacheDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("PG2ICEBERG_CACHE_DIR"); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(cache, "pg2iceberg")
}

// sparkJar finds the iceberg-spark-runtime jar scripts/setup.sh fetched.
func sparkJar(t *testing.T) string {
	t.Helper()
	jar := os.Getenv("PG2ICEBERG_SPARK_JAR")
	if jar == "" {
		jar = filepath.Join(cacheDir(t), "jars", "iceberg-spark-runtime.jar")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("no iceberg-spark-runtime jar (%v): run scripts/setup.sh, or set PG2ICEBERG_SPARK_JAR", err)
	}
	return jar
}

// sparkJVM is the running readers/spark_session.py of this test process.
type sparkJVM struct {
	cmd    *exec.Cmd
	tmp    string
	stdin  io.WriteCloser
	lines  chan string   // answers; closed by the stdout reader when the process ends
	ready  chan struct{} // closed once the hello line is read (or the process ended)
	hello  string        // the hello line; written before ready is closed
	stderr *lockedBuffer
	// mu is held from a request's write to its answer's read: one request
	// at a time, so that each answer is the one asked for. It guards lost.
	mu sync.Mutex
	// lost says why the answers no longer match the requests (one came too
	// late); every request after it fails.
	lost  string
	start time.Time
}

var (
	sparkOnce    sync.Once
	sparkShared  *sparkJVM
	sparkErr     error
	sparkCounter atomic.Int64 // names the sessions
)

// sharedSpark starts the JVM on the first call; it comes up in the
// background while the tests go on.
func sharedSpark(jar string) (*sparkJVM, error) {
	sparkOnce.Do(func() { sparkShared, sparkErr = launchSpark(jar) })
	return sparkShared, sparkErr
}

func launchSpark(jar string) (*sparkJVM, error) {
	tmp, err := os.MkdirTemp("", "pg2iceberg-spark-")
	if err != nil {
		return nil, fmt.Errorf("spark temp dir: %w", err)
	}
	j := &sparkJVM{lines: make(chan string, 16), ready: make(chan struct{}), stderr: &lockedBuffer{}, tmp: tmp, start: time.Now()}
	args := []string{"--jar", jar, "--tmp", tmp}
	// The PostgreSQL JDBC driver scripts/setup.sh fetches next to the
	// runtime, for the sessions on a JdbcCatalog (see startSparkJDBC).
	if jdbc := filepath.Join(filepath.Dir(jar), "postgresql-jdbc.jar"); fileExists(jdbc) {
		args = append(args, "--jdbc-jar", jdbc)
	}
	// The JVM trusts the tests' CA (see testCA), for catalogs served over
	// TLS; without keytool it runs on and those tests fail on their own.
	if ca, err := sharedTestCA(); err == nil {
		args = append(args, "--trust-store", ca.trustStore)
	}
	cmd, stdin, stdout, err := startReader("readers/spark_session.py", tmp, j.stderr, args...)
	if err != nil {
		return nil, err
	}
	j.cmd, j.stdin = cmd, stdin
	go j.read(stdout)
	return j, nil
}

// read passes the answers on; the first line is the hello.
func (j *sparkJVM) read(stdout io.Reader) {
	defer close(j.lines)
	first := true
	defer func() {
		if first {
			close(j.ready)
		}
	}()
	sc := bufio.NewScanner(stdout)
	// A dump of rows holding 1.75 MB values (the type matrix's changelog)
	// is one line of a few hundred MB.
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "@@ ")
		if !ok {
			continue
		}
		if first {
			j.hello, first = line, false
			close(j.ready)
			continue
		}
		j.lines <- line // read by the request that holds mu; TestMain drains at the end
	}
}

// stopSpark ends the shared JVM, if a test started it.
func stopSpark() {
	j := sparkShared
	if j == nil {
		return
	}
	go func() {
		for range j.lines { // an answer nobody waits for any more
		}
	}()
	stopReader(j.cmd, j.stdin, 30*time.Second)
	_ = os.RemoveAll(j.tmp)
}

// sparkSession is a test's session in the shared JVM, its catalog "pg"
// being the REST catalog at uri.
type sparkSession struct {
	jvm        *sparkJVM
	name       string
	uri, token string
	start      time.Time
	opened     bool
	// upAfter is how long the test waited, from startSpark, for its session.
	upAfter time.Duration
	// open is the open request's fields beyond op and session: the REST
	// catalog's uri and token, or a JdbcCatalog's (see startSparkJDBC).
	open map[string]string
}

// startSpark starts the shared JVM if no test has yet, and returns a
// session that opens on first use (or wait).
func startSpark(t *testing.T, uri, token, jar string) *sparkSession {
	t.Helper()
	j, err := sharedSpark(jar)
	if err != nil {
		t.Fatal(err)
	}
	s := &sparkSession{jvm: j, name: fmt.Sprintf("s%d", sparkCounter.Add(1)), uri: uri, token: token, start: time.Now(),
		open: map[string]string{"uri": uri, "token": token}}
	t.Cleanup(func() {
		if s.opened {
			var none any
			s.exchange(t, map[string]string{"op": "close", "session": s.name}, &none)
		}
		if t.Failed() {
			t.Logf("spark stderr (shared by the Spark tests):\n%s", tail(j.stderr.log(), 40))
		}
	})
	return s
}

// wait waits for the JVM to be up and opens the session.
func (s *sparkSession) wait(t *testing.T) {
	t.Helper()
	if s.opened {
		return
	}
	j := s.jvm
	select {
	case <-j.ready:
	case <-time.After(3 * time.Minute):
		t.Fatalf("spark did not start within 3 minutes; stderr:\n%s", tail(j.stderr.log(), 40))
	}
	var hello struct {
		Ready bool   `json:"ready"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(j.hello), &hello) != nil || !hello.Ready {
		t.Fatalf("spark did not start: %s %s", j.hello, tail(j.stderr.log(), 40))
	}
	var none any
	req := map[string]string{"op": "open", "session": s.name}
	maps.Copy(req, s.open)
	if !s.exchange(t, req, &none) {
		t.Fatalf("spark: open a session on %s failed", s.uri)
	}
	s.opened, s.upAfter = true, time.Since(s.start)
}

// do sends one request and decodes the result into out; false (with the
// test marked failed) when Spark reports an error.
func (s *sparkSession) do(t *testing.T, req map[string]string, out any) bool {
	t.Helper()
	s.wait(t)
	req["session"] = s.name
	return s.exchange(t, req, out)
}

func (s *sparkSession) exchange(t *testing.T, req map[string]string, out any) bool {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	shown := b
	if req["token"] != "" || req["password"] != "" || req["credential"] != "" {
		shown = []byte(req["op"] + " " + req["session"])
	}
	j := s.jvm
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lost != "" {
		t.Errorf("spark %s: %s", shown, j.lost)
		return false
	}
	if _, err := j.stdin.Write(append(b, '\n')); err != nil {
		t.Errorf("spark request: %v", err)
		return false
	}
	var line string
	select {
	case l, ok := <-j.lines:
		if !ok {
			t.Errorf("spark session ended; stderr:\n%s", tail(j.stderr.log(), 40))
			return false
		}
		line = l
	case <-time.After(5 * time.Minute):
		j.lost = fmt.Sprintf("the shared session did not answer %s within 5 minutes", shown)
		t.Errorf("spark session did not answer %s within 5 minutes; stderr:\n%s", shown, tail(j.stderr.log(), 40))
		return false
	}
	var resp struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil || !resp.OK {
		t.Errorf("spark %s: %s %v", shown, resp.Error, err)
		return false
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		t.Errorf("spark result of %s: %v", shown, err)
		return false
	}
	return true
}
