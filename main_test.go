package main

import (
	"testing"

	"github.com/pg2iceberg/pg2iceberg/mapping"
)

// A configuration's table property the bridge cannot use is refused at
// its entry's line.
func TestCheckTableProperties(t *testing.T) {
	o, err := mapping.ParseOverrides([]byte("tables:\n  - table: a.b\n    properties:\n      write.parquet.compression-codec: snappy\n  - table: a.c\n    properties:\n      write.parquet.compression-codec: zsdt\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `configuration:5: tables entry 2: properties: table property write.parquet.compression-codec="zsdt": not a codec (use zstd, snappy, gzip, lz4 or uncompressed)`
	if err := checkTableProperties(o); err == nil || err.Error() != want {
		t.Errorf("checkTableProperties = %v, want %s", err, want)
	}
}
