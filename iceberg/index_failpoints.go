//go:build failpoints

package iceberg

import "github.com/pg2iceberg/pg2iceberg/iceberg/keyindex"

// The key index's disk tier crashes at PG2ICEBERG_TEST_CRASH's points too
// (keyindex-spill, keyindex-merge; see keyindex.CrashPoint).
func init() { keyindex.CrashPoint = crashPoint }
