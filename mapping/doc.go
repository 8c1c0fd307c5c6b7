// Package mapping decides how a PostgreSQL column becomes an Iceberg column
// and turns PostgreSQL's text output form of a value into an Arrow value of
// that column's type.
//
// Role in the flow: replication's preflight describes each column's type
// from the catalog (a Type: array element and dimensions, domain base,
// composite attributes, owning extension) and attaches the configuration's
// rule (Overrides.Match), both on the decode.Column they describe: Type,
// Field, Kind and Column are decode's types under mapping's names, since
// mapping reads decode's vocabulary and decode knows nothing of mapping.
// iceberg asks For (the column's
// Iceberg type, from the rule table Rules) when it creates or checks a
// table, and calls Append for every value of every row it writes, whether
// the row came from the initial copy or from the WAL stream. Append needs
// only the builder: the Iceberg type For chose, and PostgreSQL's text
// forms, decide how a value reads (see Append).
//
// Goroutines: none; every function may be called from any goroutine
// (copy workers call Append in parallel).
//
// Invariants:
//   - mapping is pure: no I/O, no goroutines, no logging.
//   - Of the bridge's packages mapping imports decode only.
//   - Lossless or fail: a value that does not fit its Iceberg type exactly is
//     an error (ValueError), never rounded, truncated or replaced by NULL,
//     and it leaves the builder as it was.
//   - A type with no mapping is an *UnsupportedTypeError.
//   - docs/type-mapping.md's table is Rules (a test keeps them equal).
//
// Values arrive in the text output form of a session with DateStyle=ISO,
// TimeZone=UTC, IntervalStyle=postgres, extra_float_digits=3 and
// bytea_output=hex; replication sets these on every connection it opens.
// The parsers of the compound forms (ParseArray, ParseComposite,
// ParseHstore, ParseInterval, ParseEWKB) accept exactly what PostgreSQL's
// output functions print. A binary copy sends the binary (send) form of the
// scalar types BinaryReadable accepts; ReadBinary and AppendBinary turn it
// into the value, or the refusal, that the text form gives.
package mapping
