//go:build !failpoints

package keyindex

// crashPoint marks a place the crash tests kill the bridge at (see
// crash_failpoints.go); without the build tag failpoints it does nothing.
func crashPoint(string) {}
