package tiering

import (
	"context"
	"fmt"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

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

// ExpireSnapshots expires tbl's snapshots past its retention properties and
// deletes the files only they referenced. It returns the updated table, or
// tbl unchanged when nothing expired.
func ExpireSnapshots(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	snaps := tbl.Metadata().Snapshots()
	props := tbl.Properties()
	keep := props.GetInt(PropMinSnapshotsToKeep, 1)
	maxAge := time.Duration(props.GetInt64(PropMaxSnapshotAgeMs, 5*24*3600*1000)) * time.Millisecond
	oldest := time.Now().UnixMilli()
	for _, s := range snaps {
		oldest = min(oldest, s.TimestampMs)
	}
	if len(snaps) <= keep || time.Since(time.UnixMilli(oldest)) <= maxAge {
		return tbl, nil // nothing can expire: no commit
	}
	before := len(snaps)
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(); err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	if len(out.Metadata().Snapshots()) == before {
		return tbl, nil
	}
	return out, nil
}
