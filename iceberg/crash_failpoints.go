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
// the n-th time it reaches <point>. Points: "before-commit" (a table's
// Parquet files are written, its commit is not) and "after-commit" (a flush
// is committed, the slot is not yet acknowledged), "mid-batch" (a change is
// being applied, the batch is not flushed), "copy-finish" (a copy's rows
// are written, FinishCopy has not committed them), "copy-chunk" (a chunk of
// a first copy is committed), "copy-done" (a table's copy is committed
// and marked complete), "spec-change" (a change of a streamed transaction is
// being applied ahead of its commit), "spec-commit" (a speculation is
// merged into the flush, which has not committed it) and "after-schema" (a
// table's schema change is committed, the rows around it are not).
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
