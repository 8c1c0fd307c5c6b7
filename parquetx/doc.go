// Package parquetx is what the bridge adds to arrow-go's Parquet writer and
// reader: every Parquet file of the warehouse is written here, with the
// Parquet settings of Iceberg's spec mapping and the bridge's speed-ups.
//
//   - Writer streams rows appended to Arrow builders into a file, in
//     batches of BatchRows and row groups bounded in rows and bytes. A
//     schema of primitive columns goes straight to arrow-go's column
//     writers (flatOut: no definition levels rebuilt per batch); any other
//     goes through pqarrow. ColumnWriter writes a one-row-group file
//     column by column.
//   - int32 is written as plain INT32, without pqarrow's INT(32, signed)
//     annotation (plainInt32), as Iceberg's Java writer does.
//   - Builders and column writers allocate from a buffer pool (bufferPool)
//     instead of fresh, zeroed memory per batch.
//   - UseFastZstd replaces arrow-go's zstd codec by one that writes no
//     content checksum. It changes arrow-go for the whole process, so it
//     is not done at package load: main calls it once at start (tests and
//     benchmarks that measure it call it themselves).
//   - EachBatch, ColumnsByFieldID and PresentFields read columns of a file
//     by Iceberg field ID.
//
// Callers map Iceberg schemas to Arrow ones and describe the files for
// manifests (package iceberg); parquetx knows Arrow and Parquet only.
//
// Goroutines: none. A Writer or ColumnWriter is used by one goroutine at a
// time; the buffer pool is safe for concurrent use (copy workers write
// files at once).
//
// Invariants:
//   - A file is the one pqarrow would write for the same data and
//     settings, but for the INT32 annotation (TestFlatOutSameFile,
//     TestNestedPlainInt32).
//   - A buffer returns to the pool only through Free, once Arrow released
//     its last reference; arrow-go's Parquet writer copies what it keeps of
//     a batch first (TestBufferPoolFiles).
package parquetx
