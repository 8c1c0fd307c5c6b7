package tiering

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ExpireSnapshots expires tbl's snapshots past its retention (r, else its
// properties: see Retention) and deletes the files only they referenced.
// Snapshots a tag or a branch head points at are always kept. It returns the updated table, or
// tbl unchanged when nothing expired or the table has gc.enabled=false. An
// error means nothing was committed. A *Cleanup means the expiry was
// committed but files could not all be listed or deleted: Cleanup.Err says
// why, and Cleanup.Run tries again.
func ExpireSnapshots(ctx context.Context, tbl *table.Table, r Retention) (*table.Table, *Cleanup, error) {
	snaps := tbl.Metadata().Snapshots()
	props := tbl.Properties()
	if !props.GetBool(table.GCEnabledKey, true) {
		return tbl, nil, nil // the table's owner turned expiry off
	}
	keep, maxAge := r.of(props)
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
	if err := txn.ExpireSnapshots(expireOpts(keep, maxAge)...); err != nil {
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

// ExpiryDue is how many of tbl's snapshots ExpireSnapshots would expire
// now (a dry run: nothing is committed).
func ExpiryDue(tbl *table.Table, r Retention) (int, error) {
	if !tbl.Properties().GetBool(table.GCEnabledKey, true) {
		return 0, nil
	}
	keep, maxAge := r.of(tbl.Properties())
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(expireOpts(keep, maxAge)...); err != nil {
		return 0, fmt.Errorf("plan the expiry of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return 0, fmt.Errorf("plan the expiry of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	return len(tbl.Metadata().Snapshots()) - len(staged.Metadata().Snapshots()), nil
}

// expireOpts are iceberg-go's expiry options for a retention: the
// files are left to Cleanup.
func expireOpts(keep int, maxAge time.Duration) []table.ExpireSnapshotsOpt {
	return []table.ExpireSnapshotsOpt{table.WithPostCommit(false), table.WithRetainLast(keep), table.WithOlderThan(maxAge)}
}
