package tiering

import "time"

// OrphansRanAt pretends the schedule's last orphan cleanup ran at at, so a
// test need not wait OrphansEvery.
func (s *Schedule) OrphansRanAt(at time.Time) { s.orphans = at }
