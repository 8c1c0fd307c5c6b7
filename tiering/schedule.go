package tiering

import (
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ExpireEvery is how often a table's snapshots are expired.
const ExpireEvery = 5 * time.Minute

// maxCleanups is how many expiries' failed deletes a table retries.
const maxCleanups = 12

// Schedule is one table's maintenance between commits: when it last ran
// and the cleanups earlier expiries left. Its writer keeps one per table
// and calls AfterCommit after each commit, from the goroutine that commits.
// The zero value is ready: the first call is due.
type Schedule struct {
	last     time.Time  // when snapshots were last expired
	cleanups []*Cleanup // files of expired snapshots not deleted yet
}

// Upkeep is what a due AfterCommit did.
type Upkeep struct {
	// Table is the table after the expiry (tbl when nothing expired), or
	// nil when the expiry failed: nothing was committed.
	Table *table.Table
	// Failures are the expiry's and the retried cleanups' errors, one
	// each. None fails the commit that triggered them; the next expiry
	// tries again.
	Failures []error
	// GaveUp is how many expiries' files were given up on (their deletes
	// kept failing: a store that refuses them): they stay for orphan file
	// cleanup rather than in memory for ever.
	GaveUp int
}

// AfterCommit runs what is due for tbl, just committed: at most every
// ExpireEvery, it retries the deletes earlier expiries left, then expires
// snapshots past the table's retention. It returns nil when nothing was
// due.
func (s *Schedule) AfterCommit(ctx context.Context, tbl *table.Table) *Upkeep {
	if time.Since(s.last) < ExpireEvery {
		return nil
	}
	s.last = time.Now()
	u := &Upkeep{}
	s.cleanups = slices.DeleteFunc(s.cleanups, func(c *Cleanup) bool {
		err := c.Run(ctx, tbl)
		if err != nil {
			u.Failures = append(u.Failures, err)
		}
		return err == nil
	})
	out, left, err := ExpireSnapshots(ctx, tbl)
	if err != nil {
		u.Failures = append(u.Failures, err)
		return u
	}
	u.Table = out
	if left != nil {
		if left.Err() != nil {
			u.Failures = append(u.Failures, left.Err())
		}
		s.cleanups = append(s.cleanups, left)
	}
	if n := len(s.cleanups) - maxCleanups; n > 0 {
		u.GaveUp = n
		s.cleanups = slices.Delete(s.cleanups, 0, n)
	}
	return u
}
