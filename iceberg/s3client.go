package iceberg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// DefaultS3Timeout is how long an S3 connection may carry no byte either
// way before its request is abandoned (and retried by the SDK on another
// connection): the AWS SDK for Java's socket timeout is 50 s, Hadoop
// S3A's 200 s. Real S3 sends whitespace while it assembles a large
// multipart upload, so a slow answer still moves bytes.
const DefaultS3Timeout = 60 * time.Second

// propS3Timeout carries CatalogConfig.S3Timeout in the FileIO properties
// to the S3 factory below.
const propS3Timeout = "pg2iceberg.s3-timeout"

// iceberg-go 0.7's S3 FileIO sets a dial timeout (s3.connect-timeout) but
// nothing for a connection that goes silent once a request is on it: a
// peer that stays half-open (a NAT or load balancer that dropped the
// flow, a stuck server) holds the request, and with it a flush, until the
// kernel gives up on the socket, which for a connection that only waits
// to read is never. The factory registered here for s3a:// and s3n://
// gives every S3 FileIO an HTTP client whose connections fail after
// S3Timeout without a byte either way, and keeps one FileIO per bucket
// and properties (see s3FileIOs). s3:// is tier_io.go's bucketsIO, whose
// per-bucket IOs come from here through s3a://. The rest is iceberg-go's
// own factory, reached under the "oss" scheme (the same factory; its
// FileIO takes s3:// paths too), with the client passed the way
// iceberg-go takes an AWS configuration from its caller: in the context.
func init() {
	for _, scheme := range []string{"s3a", "s3n"} {
		icebergio.Unregister(scheme)
		icebergio.Register(scheme, s3WithTimeout)
	}
}

func s3WithTimeout(ctx context.Context, parsed *url.URL, props map[string]string) (icebergio.IO, error) {
	u := *parsed
	u.Scheme = "oss"
	if utils.GetAwsConfig(ctx) != nil { // the caller's own AWS configuration
		return icebergio.LoadFS(ctx, props, u.String())
	}
	key := s3FileIOKey(parsed.Host, props)
	s3FileIOs.Lock()
	fsys, ok := s3FileIOs.m[key]
	s3FileIOs.Unlock()
	if ok {
		return fsys, nil
	}
	timeout, err := s3TimeoutOf(props)
	if err != nil {
		return nil, err
	}
	cfg, err := s3io.ParseAWSConfig(ctx, props)
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = s3HTTPClient(timeout)
	// The file IO keeps the context it is made with for all its requests:
	// shared, it must outlive the caller's.
	fsys, err = icebergio.LoadFS(utils.WithAwsConfig(context.WithoutCancel(ctx), cfg), props, u.String())
	if err != nil {
		return nil, err
	}
	s3FileIOs.Lock()
	defer s3FileIOs.Unlock()
	if len(s3FileIOs.m) >= 64 { // properties that keep changing (vended credentials)
		clear(s3FileIOs.m)
	}
	s3FileIOs.m[key] = fsys
	return fsys, nil
}

// s3FileIOs are the S3 file IOs made so far, by bucket and properties.
// iceberg-go makes a new S3 client, with its own connection pool, each
// time a table's file IO is asked for (for every scan, manifest list and
// commit), so without this every such step opened new connections: a
// TCP and TLS handshake each, and no pool in which connections known to
// work are reused.
var s3FileIOs = struct {
	sync.Mutex
	m map[string]icebergio.IO
}{m: map[string]icebergio.IO{}}

// s3FileIOKey is the cache key of a bucket's file IO under props.
func s3FileIOKey(bucket string, props map[string]string) string {
	var b strings.Builder
	b.WriteString(bucket)
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString("\x00" + k + "=" + props[k])
	}
	return b.String()
}

// s3TimeoutOf reads propS3Timeout (DefaultS3Timeout when it is missing).
func s3TimeoutOf(props map[string]string) (time.Duration, error) {
	v, ok := props[propS3Timeout]
	if !ok {
		return DefaultS3Timeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("S3 timeout %q: want a positive duration such as 60s", v)
	}
	return d, nil
}

// s3HTTPClient is the AWS SDK's client with iceberg-go's S3 transport
// tuning, a dial timeout of at most timeout, and connections that time
// out after timeout without progress (see idleConn). The SDK's own read
// timeout is turned off: it measures each read from its start, and the
// transport starts a read on a connection before it writes the request,
// so an upload longer than the timeout would fail however fast it went.
func s3HTTPClient(timeout time.Duration) *awshttp.BuildableClient {
	dialer := &net.Dialer{Timeout: min(timeout, awshttp.DefaultDialConnectTimeout), KeepAlive: awshttp.DefaultDialKeepAliveTimeout}
	return awshttp.NewBuildableClient().WithReadTimeout(0).WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = 256, 256, 2048
		// An idle connection is closed before its read deadline would.
		t.IdleConnTimeout = min(90*time.Second, timeout/2)
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, timeout: timeout}, nil
		}
	})
}

// idleConn fails a connection on which no byte has moved, either way,
// for timeout: each read and each write pushes both deadlines forward,
// so a long upload keeps the transport's pending read alive, and a
// request that was sent and is never answered fails timeout after its
// last byte went out. Bytes the kernel still holds count as moving while
// it sends them (see unsent): a write returns once its bytes are in the
// socket's buffer, which on a slow link takes long to drain.
type idleConn struct {
	net.Conn
	timeout time.Duration
	queued  atomic.Int64 // the unsent bytes at the last expired deadline
}

func (c *idleConn) Read(p []byte) (int, error) {
	for {
		if err := c.Conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return 0, err
		}
		n, err := c.Conn.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !c.draining() {
			return n, c.silent(err)
		}
	}
}

func (c *idleConn) Write(p []byte) (int, error) {
	done := 0
	for {
		if err := c.Conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return done, err
		}
		n, err := c.Conn.Write(p[done:])
		done += n
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 && !c.draining() {
			return done, c.silent(err)
		}
	}
}

// draining says, at an expired deadline, whether the kernel has sent
// since the last one: its queue of unsent bytes has changed.
func (c *idleConn) draining() bool {
	q, ok := unsent(c.Conn)
	return ok && c.queued.Swap(int64(q)) != int64(q)
}

func (c *idleConn) silent(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &S3SilentError{After: c.timeout, Addr: c.RemoteAddr().String(), Err: err}
	}
	return err
}

// S3SilentError is an S3 connection that carried no byte for After.
// It unwraps to the deadline error, so replication.ConnLost takes it for
// the lost connection it is.
type S3SilentError struct {
	After time.Duration
	Addr  string
	Err   error
}

func (e *S3SilentError) Error() string {
	return fmt.Sprintf("no byte to or from S3 at %s for %s (the S3 timeout, --s3-timeout)", e.Addr, e.After)
}

func (e *S3SilentError) Unwrap() error { return e.Err }

// Timeout and Temporary make it a net.Error the SDK retries.
func (e *S3SilentError) Timeout() bool   { return true }
func (e *S3SilentError) Temporary() bool { return true }
