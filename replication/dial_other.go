//go:build !linux

package replication

import "syscall"

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not Linux's:
// keepalive alone bounds a silent connection there.
func setUserTimeout(string, syscall.RawConn, int) error { return nil }
