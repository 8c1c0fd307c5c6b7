package replication

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// The connections parseConfig sets up (SQL and replication alike) dial
// with TCP_USER_TIMEOUT and the bridge's keepalive, so a peer that is
// gone is noticed within about a minute.
func TestDialSetsTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, replication := range []bool{false, true} {
		c := dialConfigured(t, ln.Addr().String(), replication)
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
		c.Close()
		want := map[string]int{
			"TCP_USER_TIMEOUT": int(tcpUserTimeout.Milliseconds()),
			"TCP_KEEPIDLE":     int(keepAliveIdle.Seconds()),
			"TCP_KEEPINTVL":    int(keepAliveInterval.Seconds()),
			"TCP_KEEPCNT":      keepAliveCount,
			"SO_KEEPALIVE":     1,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("replication=%v: %s = %d, want %d", replication, k, got[k], v)
			}
		}
	}
}

// dialConfigured dials addr as a connection parseConfig set up would.
func dialConfigured(t *testing.T, addr string, replication bool) net.Conn {
	t.Helper()
	cfg, err := parseConfig("postgres://u@"+addr+"/db", replication)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.DialFunc(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
