// Package history reads and shapes a table's past: its snapshots with the
// bridge's LSN watermarks, the rows at a point (a snapshot, a time, a ref
// or a source LSN), the rows that changed between two points, tags and
// branches, and the rollback of a table to an earlier snapshot.
//
// Role in the flow: none in the stream. The history commands of main
// (snapshots, read, diff, tag, branch, rollback) call it on a table the
// catalog loaded; it starts no goroutine (iceberg-go's scanner starts and
// joins its own while a scan's records are read).
//
// Invariants: a point resolves to exactly one snapshot or to an error that
// says what exists instead; reads go through iceberg-go's scanner, which
// applies position deletes; a diff reads only the data files that changed
// between its two points; refs and rollbacks are single catalog commits
// that assert the state they were computed from.
package history
