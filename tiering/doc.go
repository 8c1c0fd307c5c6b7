// Package tiering keeps the lake healthy over time. Today: snapshot expiry,
// run by the sink after commits so that a commit every few seconds does not
// grow every table's snapshot list and metadata file without bound.
// Compaction, hot/cold placement and orphan-file cleanup are planned.
//
// Goroutines: none; callers run it between commits.
//
// Invariants: the current snapshot is never expired, and files an expired
// snapshot shares with a kept one are never deleted (iceberg-go removes
// only files no kept snapshot references).
package tiering
