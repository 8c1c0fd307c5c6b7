package replication

import (
	"net"
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
// stream, and the supervisor reconnects.
const (
	// tcpUserTimeout: how long sent data may stay unacknowledged before
	// the kernel drops the connection (Linux's TCP_USER_TIMEOUT, as
	// libpq's tcp_user_timeout).
	tcpUserTimeout = time.Minute
	// keepAliveIdle, keepAliveInterval, keepAliveCount: a connection
	// silent for keepAliveIdle is probed every keepAliveInterval, and
	// dropped after keepAliveCount probes go unanswered (35 s; on Linux
	// TCP_USER_TIMEOUT decides instead, once probes have gone unanswered
	// that long: a minute).
	keepAliveIdle     = 20 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
)

// dialer is the dialer of every connection to PostgreSQL.
func dialer() *net.Dialer {
	return &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
		Control:         setUserTimeout,
	}
}
