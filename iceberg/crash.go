//go:build !failpoints

package iceberg

// crashPoint marks a place the crash tests kill the bridge at (see
// crash_failpoints.go). Without the build tag failpoints it does nothing
// and is inlined away: a production binary never reads a test variable.
func crashPoint(string) {}
