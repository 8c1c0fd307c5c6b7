// Package tiering is the home of lake maintenance: what keeps the
// bridge's Iceberg tables healthy over time, as opposed to writing them
// (package iceberg).
//
// Role in the flow: after package iceberg commits a table it calls the
// table's Schedule.AfterCommit, which at most every ExpireEvery retries
// the deletes earlier expiries left and expires snapshots. The files:
//   - retention.go: how long history is kept (Iceberg's standard
//     history.expire.* properties, DefaultRetention on tables the bridge
//     creates);
//   - expire.go: snapshot expiry, applying the retention;
//   - cleanup.go: deleting the files only expired snapshots referenced,
//     and retrying what could not be deleted;
//   - schedule.go: when each of these runs for a table;
//   - compact.go: the compaction policy, PlanCompaction: which of a
//     table's live files a compaction rewrites (small files, files with
//     many rows deleted, too many live files, too many delete files), and
//     its tuning by table property (CompactConfigOf). It is pure: package
//     iceberg reads the files and deletes, rewrites them off the stream and
//     installs the result between flushes, moving the key index
//     (iceberg/compact.go, compact_install.go).
//
// Not built yet, and where it goes: orphan-file cleanup (files no snapshot references: a
// commit that failed or was killed, expiry cleanups given up on) in
// orphans.go; a retention other than snapshot age and count (by a
// table's changelog days, say) in retention.go. Each runs from Schedule,
// on the goroutine that commits the table. An orphan is only a file older
// than any commit still in flight, and a compaction job's new files are
// in flight until it is installed or dropped.
//
// Goroutines: none; Schedule runs on its caller's goroutine, between
// commits of its table.
//
// Invariants:
//   - The current snapshot is never expired, and a file an expired
//     snapshot shares with a kept one is never deleted (the same rule as
//     iceberg-go's: only files no kept snapshot references).
//   - Maintenance never fails a data commit: its errors are returned for
//     the caller to log and count, and the next run tries again.
//   - A table with gc.enabled=false is never expired.
//   - PlanCompaction never plans a rewrite that changes nothing (one file
//     with no deletes), and reads no more than MaxRewriteBytes a job.
package tiering
