// Package replication owns the connection to PostgreSQL: preflight checks,
// the publication's tables, the replication slot, the initial copy inside
// the slot's exported snapshot, and the logical replication stream
// (pgoutput protocol v2 with streaming of large transactions).
//
// Role in the flow: Bridge.Run reads WAL messages in order, hands them to
// decode, and feeds whole committed transactions to a Sink (the iceberg
// package). Streamed in-progress transactions are spooled to local disk and
// replayed into the Sink at STREAM COMMIT, discarded at STREAM ABORT, so
// memory does not grow with transaction size.
//
// Goroutines: none of its own; Run blocks in the caller's goroutine.
//
// Invariants:
//   - The flush position sent to PostgreSQL is never more than what the
//     Sink reports durable, except while the Sink is idle, when it is the
//     server's WAL end from keepalives (an idle publication never holds WAL).
//   - Every session uses DateStyle=ISO, TimeZone=UTC, IntervalStyle=postgres,
//     extra_float_digits=3 and bytea_output=hex, so values have one text form.
//   - Passwords never appear in errors or logs.
package replication
