package tiering

import (
	"fmt"
	"time"

	icego "github.com/apache/iceberg-go"
)

// Retention is how long a table keeps its history: the table properties
// that set it (Iceberg's standard names), the bridge's defaults, a
// configured override, and how they are read. Snapshot expiry (expire.go)
// applies it.

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

// Retention is a configured retention (the config file's retention block,
// the run and maintain flags). A field set overrides the table's property;
// a zero field leaves the property to decide. Whatever it says, the
// snapshots tags and branch heads point at are kept.
type Retention struct {
	// MaxSnapshotAge: snapshots older than this expire (beyond the newest
	// MinSnapshots). 0: history.expire.max-snapshot-age-ms.
	MaxSnapshotAge time.Duration
	// MinSnapshots: the newest this many snapshots are kept whatever their
	// age. 0: history.expire.min-snapshots-to-keep.
	MinSnapshots int
}

// Validate says what is wrong with a configured retention.
func (r Retention) Validate() error {
	if r.MaxSnapshotAge < 0 {
		return fmt.Errorf("retention: max snapshot age %s is negative: give a positive duration such as 168h", r.MaxSnapshotAge)
	}
	if r.MinSnapshots < 0 {
		return fmt.Errorf("retention: min snapshots %d is negative: give 1 or more (0 takes the table's %s)", r.MinSnapshots, PropMinSnapshotsToKeep)
	}
	return nil
}

// Or is r with its zero fields taken from d.
func (r Retention) Or(d Retention) Retention {
	if r.MaxSnapshotAge == 0 {
		r.MaxSnapshotAge = d.MaxSnapshotAge
	}
	if r.MinSnapshots == 0 {
		r.MinSnapshots = d.MinSnapshots
	}
	return r
}

// of reads a table's retention: r's fields where set, else the table's
// properties: the newest keep snapshots are kept whatever their age, older
// ones expire past maxAge. Without either, Iceberg's defaults: 1 and 5 days.
func (r Retention) of(props icego.Properties) (keep int, maxAge time.Duration) {
	keep = props.GetInt(PropMinSnapshotsToKeep, 1)
	maxAge = time.Duration(props.GetInt64(PropMaxSnapshotAgeMs, 5*24*3600*1000)) * time.Millisecond
	if r.MinSnapshots > 0 {
		keep = r.MinSnapshots
	}
	if r.MaxSnapshotAge > 0 {
		maxAge = r.MaxSnapshotAge
	}
	return max(keep, 1), maxAge
}
