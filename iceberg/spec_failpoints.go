//go:build failpoints

package iceberg

import (
	"os"
	"strconv"
)

// In a build with the tag failpoints only (see crash_failpoints.go), the
// tests can reach the limits of applying a streamed transaction ahead
// without writing 8M rows or waiting for midnight:
// PG2ICEBERG_TEST_SPEC_MAX_CHANGES lowers specMaxChanges, and
// PG2ICEBERG_TEST_SPEC_DAY_SHIFT=<days> moves the guess of a speculated
// commit's day, so that the commit comes on "another day".
func init() {
	if n, err := strconv.Atoi(os.Getenv("PG2ICEBERG_TEST_SPEC_MAX_CHANGES")); err == nil && n > 0 {
		specMaxChanges = n
	}
	if n, err := strconv.Atoi(os.Getenv("PG2ICEBERG_TEST_SPEC_DAY_SHIFT")); err == nil {
		specDayShift = int32(n)
	}
}
