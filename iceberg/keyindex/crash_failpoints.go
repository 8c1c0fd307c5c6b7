//go:build failpoints

package keyindex

// CrashPoint, in a build with the tag failpoints only, is called at the
// disk tier's crash points: "keyindex-spill" (a new run is written, the
// tier does not hold it yet) and "keyindex-merge" (a merged run is
// written, the runs it replaces are not removed). The iceberg package sets
// it to its own crashPoint (PG2ICEBERG_TEST_CRASH).
var CrashPoint func(point string)

func crashPoint(point string) {
	if CrashPoint != nil {
		CrashPoint(point)
	}
}
