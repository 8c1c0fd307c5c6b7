// Package replication owns the connections to PostgreSQL: the bridge's SQL
// session (Source: the lease, lookups in the source's catalog, the DDL
// capture's key), preflight checks and type resolution, the publication's
// tables, the replication slot, the copy of a table in a snapshot (the
// slot's exported one, or its own for a table sync), and the logical
// replication stream (pgoutput protocol v2 with streaming of large
// transactions). It does not import the iceberg package: what it feeds is
// described by its own interfaces, sized by their consumer (Applier, Tables
// and Durability make a Stream's Sink; Speculator, CopySink, DDLKeys).
//
// Role in the flow: a Stream (StartStream) reads WAL messages in order,
// hands them to decode, and feeds whole committed transactions to its Sink.
// Where the caller must act (a table new to the sink, columns whose
// existing rows need a copy, a key gained, a re-copy), Next returns an Event
// (with its transaction's XID, for WaitVisible), the caller handles it,
// calling Keepalive while it copies, passes the outcome to Handled (which
// skips a table gone or that cannot be mirrored), and calls Next again to
// go on at the same place in the WAL. Streamed in-progress transactions are
// spooled to local disk and replayed into the Sink at STREAM COMMIT,
// discarded at STREAM ABORT, so memory does not grow with transaction size;
// a Sink that is also a Speculator may apply one ahead of its commit.
//
// Goroutines: a Stream has none of its own: Next blocks in the caller's
// goroutine, and every call to the Sink is made from it. A copy
// (CopyTables, SyncTable) runs an errgroup for its duration: one goroutine
// feeds the chunks of the table's heap and one worker per connection copies
// them, each into a RowWriter of its own; the workers' Keepalive calls are
// serialised by a mutex, and so are their progress reports and writes to a
// Terminal. Every copy goroutine has returned when the copy returns.
//
// Invariants:
//   - The flush position sent to PostgreSQL is never more than what the
//     Sink reports durable, except while the Sink is idle, when it is the
//     server's WAL end from keepalives (an idle publication never holds WAL).
//   - Every session uses DateStyle=ISO, TimeZone=UTC, IntervalStyle=postgres,
//     extra_float_digits=3 and bytea_output=hex, so values have one text form.
//   - Passwords never appear in errors or logs.
package replication
