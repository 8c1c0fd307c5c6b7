//go:build !linux

package iceberg

import "net"

// unsent is not known here: a connection whose last write's bytes take
// longer than the S3 timeout to leave the kernel times out.
func unsent(net.Conn) (int, bool) { return 0, false }
