package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/integration/harness"
)

// An S3 warehouse that cannot be used stops run before anything exists:
// a missing bucket is named with how to create it, missing credentials
// with the variables to set (not the SDK's "no EC2 IMDS role found"), and
// neither creates the slot or the embedded catalog file in the current
// directory.
func TestS3WarehouseUnusable(t *testing.T) {
	t.Parallel()
	pg, conn := startSource(t, `CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);
		CREATE PUBLICATION s3e_pub FOR TABLE t;`)
	s3 := harness.StartS3T(t)
	if err := s3.CreateBucket(context.Background(), "lake"); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir() // no ~/.aws to fall back on
	noCreds := []string{"HOME=" + home, "AWS_CONFIG_FILE=" + filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none")}
	for _, tc := range []struct {
		name      string
		command   string
		warehouse string
		env       []string
		want      []string
	}{
		{"missing bucket", "run", "s3://nobucket/wh", append(s3.Env(), noCreds...),
			[]string{"bucket nobucket does not exist at " + s3.Endpoint, "create it"}},
		{"status, missing bucket", "status", "s3://nobucket/wh", append(s3.Env(), noCreds...),
			[]string{"bucket nobucket does not exist"}},
		{"no credentials", "run", "s3://lake/wh", noCreds,
			[]string{"no S3 credentials found", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"}},
		{"wrong credentials", "run", "s3://lake/wh", append(noCreds, "AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY=Zq9notTheSecret"),
			[]string{"refused the credentials", "AWS_ACCESS_KEY_ID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, tc.command, "--source", pg.SuperURL("postgres"), "--publication", "s3e_pub",
				"--warehouse", tc.warehouse, "--s3-endpoint", s3.Endpoint, "--s3-region", s3.Region, "--s3-path-style")
			cmd.Dir = cwd
			cmd.Env = append(withoutAWS(os.Environ()), tc.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("%s succeeded on an unusable warehouse; output:\n%s", tc.command, out)
			}
			t.Logf("refused:\n%s", out)
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), s3.SecretKey) || strings.Contains(string(out), "Zq9notTheSecret") {
				t.Errorf("output reveals a secret key:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(cwd, "pg2iceberg-catalog.db")); !os.IsNotExist(err) {
				t.Errorf("pg2iceberg-catalog.db created in the current directory (stat: %v)", err)
			}
			var slots int
			if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil || slots != 0 {
				t.Errorf("%d replication slots (%v), want none", slots, err)
			}
		})
	}
	// status reads a usable warehouse without writing to it.
	cmd := exec.Command(binPath, "status", "--source", pg.SuperURL("postgres"), "--publication", "s3e_pub", "--catalog", filepath.Join(t.TempDir(), "catalog.db"),
		"--warehouse", "s3://lake/wh", "--s3-endpoint", s3.Endpoint, "--s3-region", s3.Region, "--s3-path-style")
	cmd.Env = append(withoutAWS(os.Environ()), append(s3.Env(), noCreds...)...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "public.t ") {
		t.Errorf("status on a usable S3 warehouse: %v\n%s", err, out)
	}
}

// withoutAWS drops the AWS_ variables of env.
func withoutAWS(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "AWS_") {
			out = append(out, e)
		}
	}
	return out
}

// --s3-path-style addresses buckets as host/bucket whichever way the
// endpoint is given, --s3-endpoint or the AWS SDK's AWS_ENDPOINT_URL_S3;
// without it a host name endpoint is addressed bucket.host, which a
// server without bucket subdomains cannot serve, and the check says which
// flags to look at. (An IP address endpoint is always addressed path
// style by the SDK, so the test uses localhost.)
func TestS3PathStyleFlag(t *testing.T) {
	t.Parallel()
	pg, _ := startSource(t, `CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION ps_pub FOR TABLE t;`)
	s3 := harness.StartS3T(t)
	if err := s3.CreateBucket(context.Background(), "lake"); err != nil {
		t.Fatal(err)
	}
	byName := strings.Replace(s3.Endpoint, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		name  string
		flags []string
		env   []string
		want  string // "" for success
	}{
		{"flag, endpoint from the environment", []string{"--s3-path-style"}, []string{"AWS_ENDPOINT_URL_S3=" + byName}, ""},
		{"flag and --s3-endpoint", []string{"--s3-path-style", "--s3-endpoint", byName}, nil, ""},
		{"no flag", []string{"--s3-endpoint", byName}, nil, "check --s3-endpoint, --s3-region and --s3-path-style"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--source", pg.SuperURL("postgres"), "--publication", "ps_pub", "--backfill", "skip",
				"--warehouse", "s3://lake/" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name), "--catalog", filepath.Join(t.TempDir(), "catalog.db")}, tc.flags...)
			// Later variables win over the test's own environment.
			env := append([]string{"AWS_ACCESS_KEY_ID=" + s3.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3.SecretKey, "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3="}, tc.env...)
			b := startBridge(t, env, args...)
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && b.running() && !strings.Contains(b.log(), "msg=streaming"); {
				time.Sleep(50 * time.Millisecond)
			}
			switch {
			case tc.want == "" && !strings.Contains(b.log(), "msg=streaming"):
				t.Errorf("the bridge did not stream:\n%s", tail(b.log(), 10))
			case tc.want != "" && (b.running() || !strings.Contains(b.log(), tc.want)):
				t.Errorf("want an error mentioning %q:\n%s", tc.want, tail(b.log(), 10))
			}
			if b.running() {
				b.stop(t)
			}
		})
	}
}
