// Package harness starts throw-away PostgreSQL servers and S3 gateways on
// 127.0.0.1 for integration tests, benchmarks and demos.
package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	// Settings are extra postgresql.conf settings; they override the
	// defaults. Values are single-quoted unless already quoted.
	Settings map[string]string
	// Logf receives progress messages; nil discards them.
	Logf func(string, ...any)
}

// Postgres is a running throw-away PostgreSQL server.
type Postgres struct {
	Host          string // always 127.0.0.1
	Port          int
	DataDir       string
	SocketDir     string
	LogFile       string
	BinDir        string
	SuperUser     string // "postgres"
	SuperPassword string

	baseDir  string
	cred     *syscall.Credential // nil: run as the current user
	logf     func(string, ...any)
	stopOnce sync.Once
	stopErr  error
}

const pgTempPrefix = "pg2iceberg-pg-"

// StartPostgres initdb's a fresh cluster in a temp dir and starts it with
// wal_level=logical, listening on 127.0.0.1 only.
func StartPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	binDir, err := findPostgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	reapStale(pgTempPrefix, func(dir string) {
		_ = runPgCtl(cred, binDir, dir, "stop", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w")
	})
	base, err := makeTempDir(pgTempPrefix, cred)
	if err != nil {
		return nil, err
	}
	p := &Postgres{
		Host: "127.0.0.1", DataDir: filepath.Join(base, "data"), SocketDir: base,
		LogFile: filepath.Join(base, "data", "server.log"), BinDir: binDir,
		SuperUser: "postgres", SuperPassword: randomHex(16),
		baseDir: base, cred: cred, logf: logf,
	}
	if err := p.initdb(opts.Settings); err != nil {
		_ = os.RemoveAll(base)
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		_ = p.Stop() // also stops a server that came up too late for pg_ctl -w
		return nil, err
	}
	logf("postgres: started %s on %s:%d (data %s)", binDir, p.Host, p.Port, p.DataDir)
	return p, nil
}

// StartPostgresT starts a server for a test and stops it at cleanup.
func StartPostgresT(t testing.TB, opts PostgresOptions) *Postgres {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := StartPostgres(ctx, opts)
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	})
	return p
}

// URL returns a postgres:// URL for 127.0.0.1 with sslmode=disable.
func (p *Postgres) URL(user, password, db string) string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	if password != "" {
		u.User = url.UserPassword(user, password)
	} else {
		u.User = url.User(user)
	}
	return u.String()
}

// SuperURL returns the superuser URL (with password) for db.
func (p *Postgres) SuperURL(db string) string {
	return p.URL(p.SuperUser, p.SuperPassword, db)
}

// Conn opens a superuser connection to db; the caller closes it.
func (p *Postgres) Conn(ctx context.Context, db string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, p.SuperURL(db))
	if err != nil {
		return nil, fmt.Errorf("connect to postgres db %q on port %d (is the server still running? see %s): %w", db, p.Port, p.LogFile, err)
	}
	return conn, nil
}

// Exec runs sql as the superuser on database "postgres". Without args,
// sql may hold several statements.
func (p *Postgres) Exec(ctx context.Context, sql string, args ...any) error {
	return p.ExecDB(ctx, "postgres", sql, args...)
}

// ExecDB runs sql as the superuser on database db.
func (p *Postgres) ExecDB(ctx context.Context, db, sql string, args ...any) error {
	conn, err := p.Conn(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("exec on db %q (check the sql): %w", db, err)
	}
	return nil
}

// Restart restarts the server on the same port (fast shutdown): every
// connection is dropped, as in a server restart or a failover.
func (p *Postgres) Restart() error { return p.RestartMode("fast") }

// RestartMode restarts the server with pg_ctl's shutdown mode (smart,
// fast, immediate: the last one is a crash, recovered at the start).
func (p *Postgres) RestartMode(mode string) error {
	return p.pgCtl("restart", "-D", p.DataDir, "-l", p.LogFile, "-m", mode, "-w", "-t", "60", "-o", "-p "+strconv.Itoa(p.Port))
}

// Stop shuts the server down (fast mode) and removes its temp dir. It is
// safe to call more than once.
func (p *Postgres) Stop() error {
	p.stopOnce.Do(func() {
		var err error
		if _, statErr := os.Stat(filepath.Join(p.DataDir, "postmaster.pid")); statErr == nil {
			err = p.pgCtl("stop", "-D", p.DataDir, "-m", "fast", "-w", "-t", "60")
		}
		if err != nil {
			err2 := p.pgCtl("stop", "-D", p.DataDir, "-m", "immediate", "-w", "-t", "30")
			if err2 != nil {
				p.stopErr = fmt.Errorf("stop postgres on port %d (kill it by hand, pid in %s/postmaster.pid): %w%s", p.Port, p.DataDir, err, logTail(p.LogFile))
			}
		}
		if err := os.RemoveAll(p.baseDir); err != nil && p.stopErr == nil {
			p.stopErr = fmt.Errorf("remove postgres temp dir %s: %w", p.baseDir, err)
		}
	})
	return p.stopErr
}

func (p *Postgres) initdb(extra map[string]string) error {
	pwFile := filepath.Join(p.baseDir, "pwfile")
	if err := writeOwnedFile(pwFile, p.SuperPassword+"\n", p.cred); err != nil {
		return err
	}
	defer os.Remove(pwFile)
	out, err := runAs(p.cred, p.baseDir, filepath.Join(p.BinDir, "initdb"), "-D", p.DataDir, "-U", p.SuperUser,
		"--pwfile", pwFile, "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	if err != nil {
		return fmt.Errorf("initdb in %s failed (check that %s is a working PostgreSQL install; run scripts/setup.sh): %w\n%s", p.DataDir, p.BinDir, err, out)
	}
	hba := "# written by pg2iceberg integration harness\n" +
		"local all all scram-sha-256\n" +
		"local replication all scram-sha-256\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n" +
		"host replication all 127.0.0.1/32 scram-sha-256\n"
	if err := writeOwnedFile(filepath.Join(p.DataDir, "pg_hba.conf"), hba, p.cred); err != nil {
		return err
	}
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": p.SocketDir,
		"wal_level":               "logical",
		"max_wal_senders":         "10",
		"max_replication_slots":   "10",
		"fsync":                   "off",
		"full_page_writes":        "off",
		"synchronous_commit":      "off",
		"password_encryption":     "scram-sha-256",
		"log_line_prefix":         "%m [%p] %q%u@%d ",
	}
	for k, v := range extra {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# pg2iceberg integration harness\n")
	for _, k := range keys {
		v := settings[k]
		if len(v) < 2 || v[0] != '\'' || v[len(v)-1] != '\'' {
			v = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	conf := filepath.Join(p.DataDir, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", conf, err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("append settings to %s: %w", conf, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", conf, err)
	}
	return nil
}

// start runs pg_ctl start on a free port, retrying if the port was taken.
func (p *Postgres) start(ctx context.Context) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		p.Port = port
		err = p.pgCtl("start", "-D", p.DataDir, "-l", p.LogFile, "-w", "-t", "60", "-o", "-p "+strconv.Itoa(port))
		if err == nil {
			return nil
		}
		tail := logTail(p.LogFile)
		lastErr = fmt.Errorf("pg_ctl start on port %d failed (see the server log below; if the settings are invalid fix PostgresOptions.Settings): %w%s", port, err, tail)
		if !strings.Contains(tail, "already in use") {
			return lastErr
		}
		p.logf("postgres: port %d was taken, retrying", port)
	}
	return lastErr
}

func (p *Postgres) pgCtl(args ...string) error {
	return runPgCtl(p.cred, p.BinDir, p.baseDir, args...)
}

func runPgCtl(cred *syscall.Credential, binDir, dir string, args ...string) error {
	out, err := runAs(cred, dir, filepath.Join(binDir, "pg_ctl"), args...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
	}
	return nil
}

// runAs runs bin with the given credential (nil: current user) in dir.
func runAs(cred *syscall.Credential, dir, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PGTZ=UTC", "TZ=UTC")
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Env = append(cmd.Env, "HOME="+dir, "USER=postgres", "LOGNAME=postgres")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("run %s %s: %w", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return string(out), nil
}

// findPostgresBinDir finds a directory holding initdb, pg_ctl and postgres.
func findPostgresBinDir() (string, error) {
	var candidates []string
	if d := os.Getenv("PG2ICEBERG_PG_BINDIR"); d != "" {
		candidates = append(candidates, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgDirVersion(dirs[i]) > pgDirVersion(dirs[j]) })
	candidates = append(candidates, dirs...)
	if path, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(path))
	}
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("postgresql server binaries (initdb, pg_ctl, postgres) not found via PG2ICEBERG_PG_BINDIR, pg_config --bindir, /usr/lib/postgresql/*/bin or PATH: run scripts/setup.sh to install them")
}

func pgDirVersion(dir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
	return v
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// postgresCredential returns the credential of the postgres OS user when
// running as root (PostgreSQL refuses to run as root), otherwise nil.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a 'postgres' os user to run the server (run scripts/setup.sh, or run the tests as a non-root user): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("parse uid/gid of os user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// makeTempDir creates a 0700 temp dir owned by cred's user (if set) whose
// parents that user can traverse and whose path is short enough for a
// unix socket. It records the creating pid for reapStale.
func makeTempDir(prefix string, cred *syscall.Credential) (string, error) {
	parent := os.TempDir()
	if len(parent) > 60 || (cred != nil && !traversable(parent, cred)) {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("create temp dir in %s (set TMPDIR to a writable dir): %w", parent, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("write owner pid in %s: %w", dir, err)
	}
	if cred != nil {
		if !traversable(parent, cred) {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("os user uid %d cannot reach %s (set TMPDIR to a world-traversable dir such as /tmp)", cred.Uid, parent)
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("chown %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("chmod %s: %w", dir, err)
	}
	return dir, nil
}

// traversable reports whether cred's user can search every dir of path.
func traversable(path string, cred *syscall.Credential) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		okDir := m&0o001 != 0 || (ok && st.Uid == cred.Uid && m&0o100 != 0) || (ok && st.Gid == cred.Gid && m&0o010 != 0)
		if !okDir {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func writeOwnedFile(path, content string, cred *syscall.Credential) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if cred != nil {
		if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
	}
	return nil
}
