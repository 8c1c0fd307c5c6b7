// Package tiering is the home of lake maintenance: what keeps the
// bridge's Iceberg tables healthy over time, as opposed to writing them
// (package iceberg).
//
// Role in the flow: after package iceberg commits a table it calls the
// table's Schedule.AfterCommit, which every few commits rewrites the
// manifests when there are too many, once a day removes orphan files, and
// at most every ExpireEvery retries the deletes earlier expiries left and
// expires snapshots. pg2iceberg maintain (package bridge) runs the same
// steps once. The files:
//   - retention.go: how long history is kept (Iceberg's standard
//     history.expire.* properties, DefaultRetention on tables the bridge
//     creates, a configured Retention over them);
//   - expire.go: snapshot expiry, applying the retention (iceberg-go's
//     expiry: tags and branch heads are kept);
//   - cleanup.go: deleting the files only expired snapshots referenced,
//     and retrying what could not be deleted;
//   - manifests.go: merging a table's data manifests (iceberg-go's
//     RewriteManifests) past MaxManifests, and deletemanifests.go its
//     delete manifests (our own: iceberg-go leaves them);
//   - orphans.go: removing files no metadata references, past an age;
//   - lease.go: the writer lease a running bridge keeps in the warehouse,
//     which tells maintain that files of commits in flight may be about;
//   - schedule.go: when each of these runs for a table;
//   - compact.go: the compaction policy, PlanCompaction: which of a
//     table's live files a compaction rewrites (small files, files with
//     many rows deleted, too many live files, too many delete files), and
//     its tuning by table property (CompactConfigOf). It is pure: package
//     iceberg reads the files and deletes, rewrites them off the stream and
//     installs the result between flushes, moving the key index
//     (iceberg/compact.go, compact_install.go).
//
// Not built yet, and where it goes: a retention other than snapshot age
// and count (by a table's changelog days, say) in retention.go. An orphan
// is only a file older than any commit still in flight, and a compaction
// job's new files are in flight until it is installed or dropped (young:
// far below the orphan age).
//
// Goroutines: none; Schedule runs on its caller's goroutine, between
// commits of its table.
//
// Invariants:
//   - The current snapshot, and every snapshot a tag or branch head points
//     at, is never expired, and a file an expired snapshot shares with a
//     kept one is never deleted (the same rule as iceberg-go's: only files
//     no kept snapshot references).
//   - An orphan is only a file no metadata names and older than the
//     orphan age; the key index file and the version hint are never one.
//   - Maintenance never fails a data commit: its errors are returned for
//     the caller to log and count, and the next run tries again.
//   - A manifest rewrite moves no data or delete file, and a merged delete
//     manifest keeps each entry's sequence numbers: the key index stays
//     valid and every delete applies as before.
//   - A table with gc.enabled=false is never expired.
//   - PlanCompaction never plans a rewrite that changes nothing (one file
//     with no deletes), and reads no more than MaxRewriteBytes a job.
package tiering
