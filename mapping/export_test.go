package mapping

// ScanTimestamp is ParseTimestamp without its fixed-position fast path.
var ScanTimestamp = scanTimestamp
