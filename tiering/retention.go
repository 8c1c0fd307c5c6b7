package tiering

import (
	"time"

	icego "github.com/apache/iceberg-go"
)

// Retention is how long a table keeps its history: the table properties
// that set it (Iceberg's standard names), the bridge's defaults, and how
// they are read. Snapshot expiry (expire.go) applies it.

// Table properties that set the retention (Iceberg's standard names).
const (
	PropMaxSnapshotAgeMs   = "history.expire.max-snapshot-age-ms"
	PropMinSnapshotsToKeep = "history.expire.min-snapshots-to-keep"
)

// DefaultRetention is set on every table the bridge creates: snapshots older
// than an hour expire, but the newest 20 are always kept. Time travel
// further back needs larger values (ALTER TABLE ... SET TBLPROPERTIES).
var DefaultRetention = icego.Properties{
	PropMaxSnapshotAgeMs:   "3600000",
	PropMinSnapshotsToKeep: "20",
}

// retention reads a table's retention from its properties: the newest
// keep snapshots are kept whatever their age, older ones expire past
// maxAge. Without the properties, Iceberg's defaults: 1 and 5 days.
func retention(props icego.Properties) (keep int, maxAge time.Duration) {
	keep = props.GetInt(PropMinSnapshotsToKeep, 1)
	maxAge = time.Duration(props.GetInt64(PropMaxSnapshotAgeMs, 5*24*3600*1000)) * time.Millisecond
	return keep, maxAge
}
