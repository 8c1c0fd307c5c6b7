// Package mapping decides how a PostgreSQL column becomes an Iceberg column
// and turns PostgreSQL's text output form of a value into an Arrow value of
// that column's type.
//
// Role in the flow: iceberg asks For (type of a column) when it creates or
// evolves a table, and calls Append for every value of every row it writes,
// whether the row came from the initial copy or from the WAL stream.
//
// Invariants:
//   - mapping is pure: no I/O, no goroutines, no logging.
//   - Lossless or fail: a value that does not fit its Iceberg type exactly is
//     an error (ValueError), never rounded, truncated or replaced by NULL.
//   - A type with no mapping is an *UnsupportedTypeError.
//
// Values arrive in the text output form of a session with DateStyle=ISO,
// TimeZone=UTC, IntervalStyle=postgres, extra_float_digits=3 and
// bytea_output=hex; replication sets these on every connection it opens.
package mapping
