package tiering

import (
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ExpireEvery is how often a table's snapshots are expired.
const ExpireEvery = 5 * time.Minute

// rewriteCheckEvery is how many commits pass between two looks at a
// table's manifest count: a commit adds one or two, so the count stays
// within MaxManifests plus about twice this.
const rewriteCheckEvery = 8

// OrphansEvery is how often a running bridge removes a table's orphan
// files older than DefaultOrphanAge (the first time OrphansEvery after
// its first commit): files of commits in flight are far younger.
const OrphansEvery = 24 * time.Hour

// maxCleanups is how many expiries' failed deletes a table retries.
const maxCleanups = 12

// Schedule is one table's maintenance between commits: when it last ran
// and the cleanups earlier expiries left. Its writer keeps one per table
// and calls AfterCommit after each commit, from the goroutine that commits.
// The zero value is ready: the first call is due.
type Schedule struct {
	// Retention overrides the table's retention properties (its zero
	// value: none).
	Retention Retention
	// MaxManifests is the data manifests the table may have before they
	// are rewritten (0: MaxManifests).
	MaxManifests int
	// Keep are the files beside the metadata that orphan cleanup must
	// keep (see OrphanOptions.Keep).
	Keep []string

	last     time.Time  // when snapshots were last expired
	orphans  time.Time  // when orphans were last removed (zero: never looked)
	commits  int        // commits since the manifests were last counted
	cleanups []*Cleanup // files of expired snapshots not deleted yet
}

// Upkeep is what a due AfterCommit did.
type Upkeep struct {
	// Table is the table after the upkeep: tbl when nothing was committed
	// (nothing due, or a failure).
	Table *table.Table
	// Failures are the rewrite's, the expiry's and the retried cleanups'
	// errors, one each. None fails the commit that triggered them; the
	// next run tries again.
	Failures []error
	// GaveUp is how many expiries' files were given up on (their deletes
	// kept failing: a store that refuses them): they stay for orphan file
	// cleanup rather than in memory for ever.
	GaveUp int
	// Manifests is the manifest rewrite, when one was looked at.
	Manifests *ManifestRewrite
	// Expired is how many snapshots the expiry removed.
	Expired int
	// Orphans is the orphan cleanup, when one ran.
	Orphans *Orphans
}

// AfterCommit runs what is due for tbl, just committed: every
// rewriteCheckEvery commits, a manifest rewrite when the table has more
// than MaxManifests data or delete manifests; every OrphansEvery, orphan cleanup; at most every
// ExpireEvery, the deletes earlier
// expiries left are retried and snapshots past the retention expired. It
// returns nil when nothing was due.
func (s *Schedule) AfterCommit(ctx context.Context, cat catalog.Catalog, tbl *table.Table) *Upkeep {
	var u *Upkeep
	if s.commits++; s.commits >= rewriteCheckEvery {
		s.commits = 0
		u = &Upkeep{Table: tbl}
		out, r, err := TidyManifests(ctx, cat, tbl, s.MaxManifests, false)
		if err != nil {
			u.Failures = append(u.Failures, err)
		}
		tbl, u.Table, u.Manifests = out, out, &r
	}
	if s.orphans.IsZero() {
		s.orphans = time.Now()
	} else if time.Since(s.orphans) >= OrphansEvery {
		s.orphans = time.Now()
		if u == nil {
			u = &Upkeep{Table: tbl}
		}
		o, err := RemoveOrphans(ctx, tbl, OrphanOptions{OlderThan: DefaultOrphanAge, Keep: s.Keep})
		if err != nil {
			u.Failures = append(u.Failures, err)
		}
		u.Orphans = &o
	}
	if time.Since(s.last) < ExpireEvery {
		return u
	}
	s.last = time.Now()
	if u == nil {
		u = &Upkeep{Table: tbl}
	}
	s.expire(ctx, tbl, u)
	return u
}

// expire retries earlier expiries' deletes and expires tbl's snapshots,
// into u.
func (s *Schedule) expire(ctx context.Context, tbl *table.Table, u *Upkeep) {
	s.cleanups = slices.DeleteFunc(s.cleanups, func(c *Cleanup) bool {
		err := c.Run(ctx, tbl)
		if err != nil {
			u.Failures = append(u.Failures, err)
		}
		return err == nil
	})
	out, left, err := ExpireSnapshots(ctx, tbl, s.Retention)
	if err != nil {
		u.Failures = append(u.Failures, err)
		return
	}
	u.Table = out
	u.Expired = len(tbl.Metadata().Snapshots()) - len(out.Metadata().Snapshots())
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
}
