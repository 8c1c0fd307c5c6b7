package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 is a running versitygw S3 gateway with the posix backend.
type S3 struct {
	Endpoint  string // http://127.0.0.1:port
	Region    string // us-east-1
	AccessKey string
	SecretKey string
	Dir       string // posix backend root: one sub dir per bucket
	LogFile   string
	Bin       string

	baseDir  string
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	client   *s3.Client
	logf     func(string, ...any)
	stopOnce sync.Once
	stopErr  error
}

const s3TempPrefix = "pg2iceberg-s3-"

// StartS3 starts versitygw on a free 127.0.0.1 port with random root keys
// and waits until it serves a put and a get.
func StartS3(ctx context.Context, logf func(string, ...any)) (*S3, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bin, err := findVersitygw()
	if err != nil {
		return nil, err
	}
	reapStale(s3TempPrefix, killStaleGateway)
	base, err := makeTempDir(s3TempPrefix, nil)
	if err != nil {
		return nil, err
	}
	s := &S3{
		Region: "us-east-1", AccessKey: "AK" + randomHex(9), SecretKey: randomHex(20),
		Dir: filepath.Join(base, "data"), LogFile: filepath.Join(base, "versitygw.log"), Bin: bin,
		baseDir: base, logf: logf,
	}
	if err := s.start(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	logf("s3: versitygw %s serving %s (dir %s)", bin, s.Endpoint, s.Dir)
	return s, nil
}

// StartS3T starts a gateway for a test and stops it at cleanup.
func StartS3T(t testing.TB) *S3 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := StartS3(ctx, t.Logf)
	if err != nil {
		t.Fatalf("start s3: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop s3: %v", err)
		}
	})
	return s
}

// Client returns an S3 client for the gateway (path-style, static keys).
func (s *S3) Client() *s3.Client { return s.client }

// Env returns AWS_* variables for a child process (e.g. a reader script).
func (s *S3) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region, "AWS_DEFAULT_REGION=" + s.Region,
		"AWS_ENDPOINT_URL=" + s.Endpoint, "AWS_ENDPOINT_URL_S3=" + s.Endpoint,
	}
}

// CreateBucket creates a bucket.
func (s *S3) CreateBucket(ctx context.Context, name string) error {
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("create bucket %q at %s (bucket names are 3-63 lowercase letters, digits, '-' or '.'): %w", name, s.Endpoint, err)
	}
	return nil
}

// PutObject writes an object.
func (s *S3) PutObject(ctx context.Context, bucket, key string, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s (does the bucket exist?): %w", bucket, key, err)
	}
	return nil
}

// GetObject reads a whole object.
func (s *S3) GetObject(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s (does the object exist?): %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read body of s3://%s/%s: %w", bucket, key, err)
	}
	return b, nil
}

// Stop terminates the gateway and removes its temp dir. It is safe to call
// more than once.
func (s *S3) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		if err := os.RemoveAll(s.baseDir); err != nil {
			s.stopErr = fmt.Errorf("remove s3 temp dir %s: %w", s.baseDir, err)
		}
	})
	return s.stopErr
}

// start launches versitygw, first with xattr metadata and, if the file
// system lacks user xattrs, again with a sidecar metadata dir.
func (s *S3) start(ctx context.Context) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create s3 data dir %s: %w", s.Dir, err)
	}
	err := s.launch(ctx, nil)
	if err != nil && strings.Contains(logTail(s.LogFile), "xattr") {
		s.logf("s3: no user xattrs on %s, using a sidecar metadata dir", s.Dir)
		side := filepath.Join(s.baseDir, "meta")
		if mkErr := os.MkdirAll(side, 0o700); mkErr != nil {
			return fmt.Errorf("create sidecar dir %s: %w", side, mkErr)
		}
		err = s.launch(ctx, []string{"--sidecar", side})
	}
	return err
}

func (s *S3) launch(ctx context.Context, posixFlags []string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.Endpoint = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		args := []string{"--port", "127.0.0.1:" + strconv.Itoa(port), "--region", s.Region, "--quiet", "posix"}
		args = append(append(args, posixFlags...), s.Dir)
		logFile, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", s.LogFile, err)
		}
		cmd := exec.Command(s.Bin, args...)
		cmd.Dir = s.baseDir
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// Keys go through the environment so they do not show in ps.
		cmd.Env = append(gatewayEnv(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return fmt.Errorf("start %s (rebuild it with scripts/setup.sh): %w", s.Bin, err)
		}
		logFile.Close()
		s.cmd, s.done = cmd, make(chan struct{})
		go func(done chan struct{}) { s.waitErr = cmd.Wait(); close(done) }(s.done)
		_ = os.WriteFile(filepath.Join(s.baseDir, "server.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
		s.client = s3.New(s3.Options{
			Region: s.Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		})
		lastErr = s.waitReady(ctx)
		if lastErr == nil {
			return nil
		}
		s.stopProcess()
		if !strings.Contains(logTail(s.LogFile), "address already in use") {
			return lastErr
		}
		s.logf("s3: port %d was taken, retrying", port)
	}
	return lastErr
}

// waitReady polls until the gateway answers, then checks put and get.
func (s *S3) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.client.ListBuckets(pctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			break
		}
		select {
		case <-s.done:
			return fmt.Errorf("versitygw exited early (%v; see the log below; rebuild with scripts/setup.sh if it is broken)%s", s.waitErr, logTail(s.LogFile))
		case <-ctx.Done():
			return fmt.Errorf("wait for versitygw at %s: %w%s", s.Endpoint, ctx.Err(), logTail(s.LogFile))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw at %s did not answer within 30s (see the log below): %w%s", s.Endpoint, err, logTail(s.LogFile))
		}
	}
	const bucket, key = "pg2iceberg-harness-probe", "probe/object.txt"
	want := []byte("probe " + randomHex(4))
	if err := s.CreateBucket(ctx, bucket); err != nil {
		return fmt.Errorf("versitygw self-test: %w%s", err, logTail(s.LogFile))
	}
	if err := s.PutObject(ctx, bucket, key, want); err != nil {
		return fmt.Errorf("versitygw self-test: %w%s", err, logTail(s.LogFile))
	}
	got, err := s.GetObject(ctx, bucket, key)
	if err != nil {
		return fmt.Errorf("versitygw self-test: %w%s", err, logTail(s.LogFile))
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("versitygw self-test: got %q back, want %q (the posix backend in %s is broken)", got, want, s.Dir)
	}
	_, err1 := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	_, err2 := s.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("versitygw self-test cleanup: %w", err)
	}
	return nil
}

func (s *S3) stopProcess() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// gatewayEnv is the environment without settings that would change how
// versitygw behaves (VGW_*, ROOT_*).
func gatewayEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
			env = append(env, kv)
		}
	}
	return env
}

// killStaleGateway stops a versitygw left behind by a dead test process.
func killStaleGateway(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "server.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("versitygw")) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// findVersitygw looks in $PG2ICEBERG_VERSITYGW, PATH, $GOBIN,
// $(go env GOPATH)/bin and $HOME/go/bin.
func findVersitygw() (string, error) {
	if p := os.Getenv("PG2ICEBERG_VERSITYGW"); p != "" {
		if isExec(p) {
			return p, nil
		}
		return "", fmt.Errorf("PG2ICEBERG_VERSITYGW=%s is not an executable file: fix the variable or unset it", p)
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	dirs := goBinDirs()
	for _, d := range dirs {
		if p := filepath.Join(d, "versitygw"); isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw not found in PATH or %s: run scripts/setup.sh (it runs go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)", strings.Join(dirs, ", "))
}

// goBinDirs are where go install puts binaries: $GOBIN, $(go env GOBIN),
// each $(go env GOPATH)/bin and $HOME/go/bin.
func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
			dirs = append(dirs, strings.TrimSpace(lines[0]))
		}
		if len(lines) > 1 {
			for _, gp := range filepath.SplitList(strings.TrimSpace(lines[1])) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

// reapStale cleans up temp dirs left by test processes that died without
// cleanup (e.g. a go test timeout), calling stop on each first.
func reapStale(prefix string, stop func(dir string)) {
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
		for _, dir := range dirs {
			b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			stop(dir)
			_ = os.RemoveAll(dir)
		}
	}
}

// freePort picks a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port on 127.0.0.1 (is the loopback interface up?): %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("close probe listener: %w", err)
	}
	return port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// logTail returns the last lines of a log file, formatted for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "\n--- tail of " + path + " ---\n" + strings.Join(lines, "\n")
}
