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
//   - schedule.go: when each of these runs for a table.
//
// Not built yet, and where it goes: compaction (rewriting a mirror's
// small data files and their position deletes into fewer files) in
// compact.go; a retention other than snapshot age and count (by a table's changelog
// days, say) in retention.go. Compaction rewrites the files the mirror's
// key index points into (iceberg/keyindex), so it must commit through the
// mirror or make it rebuild its index.
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
package tiering
