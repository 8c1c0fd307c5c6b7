package replication

import (
	"context"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The connections parseConfig sets up (SQL and replication alike) dial
// with TCP_USER_TIMEOUT and the bridge's keepalive, so a peer that is
// gone is noticed within about a minute; libpq's keywords in the
// connection string change them, and are not sent to the server.
func TestDialSetsTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defaults := map[string]int{
		"TCP_USER_TIMEOUT": int(defaultUserTimeout.Milliseconds()),
		"TCP_KEEPIDLE":     int(defaultKeepAliveIdle.Seconds()),
		"TCP_KEEPINTVL":    int(defaultKeepAliveInterval.Seconds()),
		"TCP_KEEPCNT":      defaultKeepAliveCount,
		"SO_KEEPALIVE":     1,
	}
	for _, tc := range []struct {
		query       string
		replication bool
		want        map[string]int
	}{
		{"", false, defaults},
		{"", true, defaults},
		{"?keepalives_idle=7&keepalives_interval=2&keepalives_count=4&tcp_user_timeout=9000", true,
			map[string]int{"TCP_USER_TIMEOUT": 9000, "TCP_KEEPIDLE": 7, "TCP_KEEPINTVL": 2, "TCP_KEEPCNT": 4, "SO_KEEPALIVE": 1}},
		{"?keepalives=0&tcp_user_timeout=0", false, map[string]int{"TCP_USER_TIMEOUT": 0, "SO_KEEPALIVE": 0}},
	} {
		cfg, err := parseConfig("postgres://u@"+ln.Addr().String()+"/db"+tc.query, tc.replication)
		if err != nil {
			t.Fatal(err)
		}
		for k := range cfg.RuntimeParams {
			if strings.HasPrefix(k, "keepalives") || k == "tcp_user_timeout" {
				t.Errorf("%q: %s is sent to the server as a setting", tc.query, k)
			}
		}
		got := sockopts(t, dialConfigured(t, ln.Addr().String(), tc.query, tc.replication))
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q replication=%v: %s = %d, want %d", tc.query, tc.replication, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{"keepalives_idle=soon", "keepalives_count=-1", "tcp_user_timeout=1.5"} {
		_, err := parseConfig("postgres://u@"+ln.Addr().String()+"/db?"+bad, false)
		key, _, _ := strings.Cut(bad, "=")
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v; want an error naming %s", bad, err, key)
		}
	}
}

// sockopts reads a TCP connection's timeout options, and closes it.
func sockopts(t *testing.T, c net.Conn) map[string]int {
	t.Helper()
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		for name, opt := range map[string][2]int{
			"TCP_USER_TIMEOUT": {unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT},
			"TCP_KEEPIDLE":     {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
			"TCP_KEEPINTVL":    {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
			"TCP_KEEPCNT":      {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
			"SO_KEEPALIVE":     {unix.SOL_SOCKET, unix.SO_KEEPALIVE},
		} {
			v, err := unix.GetsockoptInt(int(fd), opt[0], opt[1])
			if err != nil {
				serr = err
			}
			got[name] = v
		}
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return got
}

// dialConfigured dials addr as a connection parseConfig set up would,
// its URL ending in query (may be "").
func dialConfigured(t *testing.T, addr, query string, replication bool) net.Conn {
	t.Helper()
	cfg, err := parseConfig("postgres://u@"+addr+"/db"+query, replication)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.DialFunc(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
