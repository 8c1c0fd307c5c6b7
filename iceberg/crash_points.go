package iceberg

// CrashPoints names every point a bridge built with the tag failpoints can
// be killed at (PG2ICEBERG_TEST_CRASH=<point>:<n>, see crash_failpoints.go):
// the randomized crash driver (integration/chaos_random_test.go) picks
// from it, and TestCrashPointsCalled checks each is reached in the source.
var CrashPoints = []string{
	"before-commit",     // a table's Parquet files are written, its commit is not
	"after-commit",      // a flush is committed, the slot is not yet acknowledged
	"mid-batch",         // a change is being applied, the batch is not flushed
	"after-schema",      // a table's schema change is committed, the rows around it are not
	"copy-chunk",        // a chunk of a first copy is committed
	"copy-done",         // a table's copy is committed and marked complete
	"copy-finish",       // a copy's rows are written, FinishCopy has not committed them
	"spec-change",       // a change of a streamed transaction is applied ahead of its commit
	"spec-commit",       // a speculation is merged into the flush, which has not committed it
	"spec-abort",        // a speculation was abandoned (its files dropped), the stream goes on
	"compact-written",   // a compaction's files are written, not installed
	"compact-install",   // a compaction is being installed
	"compact-committed", // a compaction is committed
	"keyindex-spill",    // the key index's disk tier is spilling a run
	"keyindex-merge",    // the key index's disk tier is merging runs
	"index-save",        // in the middle of writing a key index file
}
