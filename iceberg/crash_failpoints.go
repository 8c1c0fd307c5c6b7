//go:build failpoints

package iceberg

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Fault injection for the crash tests in integration/, compiled in only
// with the build tag failpoints (the tests build their binary with
// -tags failpoints; see crash.go for every other build): with
// PG2ICEBERG_TEST_CRASH=<point>:<n> the process kills itself with SIGKILL
// the n-th time it reaches <point>. CrashPoints (crash_points.go) lists
// every point and what state it leaves.
var crash = parseCrash(os.Getenv("PG2ICEBERG_TEST_CRASH"))

type crashSpec struct {
	point string
	n     int
}

func parseCrash(s string) *crashSpec {
	point, n, ok := strings.Cut(s, ":")
	if !ok {
		return nil
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		return nil
	}
	return &crashSpec{point: point, n: count}
}

func crashPoint(point string) {
	if crash == nil || crash.point != point {
		return
	}
	if crash.n--; crash.n == 0 {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
