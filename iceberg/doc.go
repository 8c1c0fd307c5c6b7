// Package iceberg writes the bridge's Iceberg tables and commits them.
//
// Role in the flow: replication feeds a Sink whole, committed source
// transactions (Begin, Change..., Commit), after mapping has said what
// each column becomes and evolution how a changed table's schema follows.
// The Sink keeps, per source table, a mirror (current state, position
// deletes driven by the key index, package iceberg/keyindex) and a
// changelog (one row per change). At a flush it closes each table's
// Parquet files (written by package parquetx), commits one snapshot per
// table whose summary carries the LSN watermark and the source identity,
// runs the table's maintenance when due (package tiering), and then
// reports the LSN that is durable so replication may acknowledge it.
//
// Besides the stream: the initial copy (BeginCopy, CopyWriter,
// ChunkDone, FinishCopy), schema changes and DDL events (evolve.go,
// ddl.go, keychange.go), streamed transactions applied ahead of their
// commit (speculate.go), the catalogs (catalog.go) and repair of a
// catalog entry (repair.go). Package iceberg/rest serves the same
// catalog read-only.
//
// Goroutines: none of its own. The Sink is called from one goroutine
// (replication's stream loop), except during a copy: each copy worker
// owns a CopyWriter and calls ChunkDone from its own goroutine; copyMu
// guards the sink's lists of copies and each copy's lock serialises its
// chunk commits. After a flush the sink may start one compaction job per
// Iceberg table (compact_install.go): a goroutine that only reads an
// immutable table handle and writes new files, and hands its result over
// by closing its done channel; the stream installs it, and SaveIndexes
// cancels and waits for it. Test crash points (crash_failpoints.go) exist only in a
// build with the tag failpoints.
//
// Invariants:
//   - A flush never splits a source transaction for one table.
//   - A snapshot's summary carries pg2iceberg.lsn, the end LSN of the last
//     source transaction it contains; a transaction that ends at or below a
//     table's watermark is skipped for that table (exactly once on restart).
//   - Durable returns only LSNs every table with pending data has committed.
//   - The key index is a cache: rebuilt from the table's files at start
//     unless the file saved at the last clean stop matches the table.
//   - Nothing is written as NULL for a value the source did not send.
//   - A failed maintenance run never fails the commit before it.
//   - A compaction is installed in one commit between flushes: every
//     delete the stream committed since the snapshot it read is moved onto
//     the rewritten rows in that commit, and the key index follows
//     (keyindex.Index.Remap), or is rebuilt.
package iceberg
