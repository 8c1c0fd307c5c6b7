package tiering

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ExpireSnapshots expires tbl's snapshots past its retention properties and
// deletes the files only they referenced. It returns the updated table, or
// tbl unchanged when nothing expired or the table has gc.enabled=false. An
// error means nothing was committed. A *Cleanup means the expiry was
// committed but files could not all be listed or deleted: Cleanup.Err says
// why, and Cleanup.Run tries again.
func ExpireSnapshots(ctx context.Context, tbl *table.Table) (*table.Table, *Cleanup, error) {
	snaps := tbl.Metadata().Snapshots()
	props := tbl.Properties()
	if !props.GetBool(table.GCEnabledKey, true) {
		return tbl, nil, nil // the table's owner turned expiry off
	}
	keep, maxAge := retention(props)
	oldest := time.Now().UnixMilli()
	for _, s := range snaps {
		oldest = min(oldest, s.TimestampMs)
	}
	if len(snaps) <= keep || time.Since(time.UnixMilli(oldest)) <= maxAge {
		return tbl, nil, nil // nothing can expire: no commit
	}
	name := strings.Join(tbl.Identifier(), ".")
	txn := tbl.NewTransaction()
	// The files are deleted here, not by iceberg-go after the commit: its
	// cleanup error comes with a committed table and leaves no way to
	// find the files again for a retry.
	if err := txn.ExpireSnapshots(table.WithPostCommit(false)); err != nil {
		return nil, nil, fmt.Errorf("expire snapshots of %s: %w", name, err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("expire snapshots of %s: %w", name, err)
	}
	kept := map[int64]bool{}
	for _, s := range out.Metadata().Snapshots() {
		kept[s.SnapshotID] = true
	}
	c := &Cleanup{table: name, pre: tbl}
	for _, s := range snaps {
		if !kept[s.SnapshotID] {
			c.expired = append(c.expired, s.SnapshotID)
		}
	}
	if len(c.expired) == 0 {
		return tbl, nil, nil
	}
	if c.Run(ctx, out) != nil {
		return out, c, nil
	}
	return out, nil, nil
}
