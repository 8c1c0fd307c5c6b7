package replication

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"
)

// A connection to PostgreSQL whose peer is gone (a network partition, a
// host that died without closing its sockets) looks, to the bridge, like a
// query that never answers. The kernel's defaults notice late: data sent
// and never acknowledged is retransmitted for about 15 minutes
// (tcp_retries2), and Go's keepalive (15 s idle, then 9 probes 15 s apart)
// takes 2.5 minutes on a silent connection. The bridge's connections
// notice within about a minute either way, for the SQL sessions (catalog
// queries, the lease, DDL capture, the copy) as for the replication
// stream, and the supervisor reconnects. A connection string can change
// that with libpq's keywords (see tcpFromParams).
const (
	// defaultUserTimeout: how long sent data may stay unacknowledged
	// before the kernel drops the connection (Linux's TCP_USER_TIMEOUT,
	// libpq's tcp_user_timeout).
	defaultUserTimeout = time.Minute
	// A connection silent for defaultKeepAliveIdle is probed every
	// defaultKeepAliveInterval, and dropped after defaultKeepAliveCount
	// probes go unanswered (35 s; on Linux TCP_USER_TIMEOUT decides
	// instead, once probes have gone unanswered that long: a minute).
	defaultKeepAliveIdle     = 20 * time.Second
	defaultKeepAliveInterval = 5 * time.Second
	defaultKeepAliveCount    = 3
)

// tcpSettings are a connection's TCP timeouts.
type tcpSettings struct {
	keepAlive   net.KeepAliveConfig
	userTimeout time.Duration // 0: the system's
}

// tcpFromParams takes libpq's TCP keywords out of a parsed connection
// string's parameters (pgx would send them to the server as settings,
// which it refuses) and returns the settings they give, the bridge's
// defaults for those not given: keepalives (1, or 0 to turn probes off),
// keepalives_idle, keepalives_interval (seconds), keepalives_count, and
// tcp_user_timeout (milliseconds, 0 for the system's).
func tcpFromParams(params map[string]string) (tcpSettings, error) {
	s := tcpSettings{
		keepAlive:   net.KeepAliveConfig{Enable: true, Idle: defaultKeepAliveIdle, Interval: defaultKeepAliveInterval, Count: defaultKeepAliveCount},
		userTimeout: defaultUserTimeout,
	}
	num := func(key string, set func(int)) error {
		v, ok := params[key]
		if !ok {
			return nil
		}
		delete(params, key)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("source: %s=%q is not a whole number of 0 or more", key, v)
		}
		set(n)
		return nil
	}
	for _, kw := range []struct {
		key string
		set func(int)
	}{
		{"keepalives_idle", func(n int) { s.keepAlive.Idle = time.Duration(n) * time.Second }},
		{"keepalives_interval", func(n int) { s.keepAlive.Interval = time.Duration(n) * time.Second }},
		{"keepalives_count", func(n int) { s.keepAlive.Count = n }},
		{"tcp_user_timeout", func(n int) { s.userTimeout = time.Duration(n) * time.Millisecond }},
		{"keepalives", func(n int) { s.keepAlive.Enable = n != 0 }},
	} {
		if err := num(kw.key, kw.set); err != nil {
			return tcpSettings{}, err
		}
	}
	return s, nil
}

// dialer is the dialer of a connection to PostgreSQL with s.
func (s tcpSettings) dialer() *net.Dialer {
	d := &net.Dialer{KeepAliveConfig: s.keepAlive}
	if !s.keepAlive.Enable {
		d.KeepAlive = -1 // Go's default would turn probes on
	}
	if s.userTimeout > 0 {
		ms := int(s.userTimeout.Milliseconds())
		d.Control = func(network, _ string, c syscall.RawConn) error { return setUserTimeout(network, c, ms) }
	}
	return d
}
