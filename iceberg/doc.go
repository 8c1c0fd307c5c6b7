// Package iceberg writes the bridge's Iceberg tables and commits them.
//
// Role in the flow: replication feeds a Sink whole, committed source
// transactions (Begin, Change..., Commit). The Sink keeps, per source table,
// a mirror (current state, position deletes driven by a key index) and a
// changelog (one row per change). At a flush it closes each table's Parquet
// files, commits one snapshot per table whose summary carries the LSN
// watermark and the source identity, and then reports the LSN that is
// durable so replication may acknowledge it.
//
// Goroutines: none. Every method is called from the replication goroutine.
//
// Invariants:
//   - A flush never splits a source transaction for one table.
//   - A snapshot's summary carries pg2iceberg.lsn, the end LSN of the last
//     source transaction it contains; a transaction that ends at or below a
//     table's watermark is skipped for that table (exactly once on restart).
//   - Durable returns only LSNs every table with pending data has committed.
//   - The key index is a cache: rebuilt from the table's files at start.
//   - Nothing is written as NULL for a value the source did not send.
package iceberg
