// Package keyindex is the mirror's key index: for every live row of a
// mirror table, its key → where the row is (a data file and a row
// position), which the mirror looks up to write a position delete when a
// change updates or deletes the row.
//
// Role in the flow: a part of the iceberg stage, used only by package
// iceberg's mirror (hence iceberg/keyindex, not a stage of its own at the
// top level). It holds:
//   - Index: the map itself (an open-addressing table of integers with
//     runs for keys of one 8-byte value, inline short keys, long keys), the
//     list of files its locations point into, and Overlay, a speculation's
//     view of it;
//   - the key encoding (AppendText, AppendBinary, AppendArray, SealRow for
//     a whole-row key): the same bytes whether the value came as pgoutput
//     text, in a binary copy or read back from Parquet;
//   - the index file (Stamp, Index.Write, Read) and the rebuild of one data
//     file's rows (Index.ReadFile). Which files to read, the position
//     deletes and where the index file lives are Iceberg's business and
//     stay in package iceberg.
//
// Goroutines: none. An Index is not safe for concurrent use: package
// iceberg changes it from one goroutine at a time (the sink's caller, or
// a copy worker committing a chunk under its copy's lock); a copy's
// parallel workers otherwise only build keys (the Append functions and
// Keys, one per worker), which touches no index.
//
// Invariants:
//   - Each key has exactly one place among the integer, short and long maps,
//     decided by its bytes alone.
//   - A key built from a value's source text equals the key built from its
//     binary copy form and the key read back from the Parquet file.
//   - Outside a whole-row index (SetRepeats) a key has at most one live row;
//     Add and AddAll report a key that is there already.
//   - The index is a cache: an index file is used only when its stamp is
//     the table's current one and its checksum holds; otherwise the index
//     is rebuilt from the table's files.
package keyindex
