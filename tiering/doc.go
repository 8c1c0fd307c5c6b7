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
//   - schedule.go: when each of these runs for a table.
//
// Not built yet, and where it goes: compaction (rewriting a mirror's
// small data files and their position deletes into fewer files) in
// compact.go; orphan-file cleanup (files no snapshot references: a
// commit that failed or was killed, expiry cleanups given up on) in
// orphans.go; a retention other than snapshot age and count (by a
// table's changelog days, say) in retention.go. Each runs from Schedule,
// on the goroutine that commits the table. Compaction rewrites the files
// the mirror's key index points into (iceberg/keyindex), so it must commit
// through the mirror or make it rebuild its index; and an orphan is only
// a file older than any commit still in flight.
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
package tiering
