// Package decode turns pgoutput (logical replication protocol v1/v2) messages
// into the bridge's own vocabulary: transaction frames, relations and row
// changes with before and after images.
//
// That vocabulary includes what the rest of the flow learns about a column
// besides pgoutput's message, as plain data decode carries but does not
// interpret: the catalog's description of its type (Type, from
// replication's preflight) and the configuration's rule for it (Rule, from
// mapping.Overrides.Match). Package mapping reads both and decides the
// column's Iceberg type; decode itself imports no package of the bridge, so
// the flow replication → decode → mapping/evolution → iceberg has no edge
// back (TestImportsNoStage).
//
// Role in the flow: replication hands each XLogData payload to a Decoder in
// WAL order; the Decoder returns one Message per payload. It keeps the
// relation cache (pgoutput sends a Relation message before the first change
// of a table in a session and again after its schema changes) and tracks
// whether it is inside a streamed (in-progress) transaction.
//
// The body of a DDL capture message, once replication has checked its
// signature, is parsed by ParseDDLEvent.
//
// Goroutines: none; a Decoder is used by one goroutine (replication's
// stream), and the copy parsers by the copy worker that owns each.
//
// Invariants:
//   - decode is pure: no I/O, no goroutines, no logging.
//   - decode imports no other package of the bridge.
//   - An unchanged TOAST value ('u' in pgoutput) is a Datum of kind
//     Unchanged, never confused with NULL.
//   - Malformed input yields an error, never a panic.
//   - Insert, Update and Delete, the bulk of a stream, are read without
//     pglogrepl; with Decoder.Transient they allocate nothing, and the
//     change is valid only until the next message is decoded. Every other
//     message is parsed by pglogrepl.ParseV2.
//
// The same Datum type carries values read by the initial copy: COPY text
// format (see ParseCopyText), or binary format (CopyBinaryParser, Binary
// datums) when mapping reads every column's binary form; both paths feed
// one value decoder in mapping.
package decode
