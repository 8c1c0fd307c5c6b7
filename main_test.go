package main

import (
	"strings"
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

// A partition field of bad syntax is refused at its entry's line; one
// that is a list of the wrong shape is refused by the file's check.
func TestCheckPartitionFields(t *testing.T) {
	o, err := mapping.ParseOverrides([]byte("tables:\n  - table: a.b\n    partition: [\"day(created_at)\", \"bucket(id)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `configuration:2: tables entry 1: partition: partition field "bucket(id)": bucket takes a number and a column, e.g. bucket(16, id)`
	if err := checkTableProperties(o); err == nil || err.Error() != want {
		t.Errorf("checkTableProperties = %v, want %s", err, want)
	}
	if _, err := mapping.ParseOverrides([]byte("tables:\n  - table: a.b\n    partition: day(created_at)\n")); err == nil || !strings.Contains(err.Error(), "partition must be a list") {
		t.Errorf("a partition that is not a list: %v, want an error saying it must be a list", err)
	}
	// The changelog's spec likewise.
	o, err = mapping.ParseOverrides([]byte("tables:\n  - table: a.b\n    changelog_partition: [\"weeks(commit_ts)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want = `configuration:2: tables entry 1: changelog_partition: partition field "weeks(commit_ts)": unknown transform "weeks" (the transforms are identity, bucket, truncate, year, month, day, hour)`
	if err := checkTableProperties(o); err == nil || err.Error() != want {
		t.Errorf("checkTableProperties = %v, want %s", err, want)
	}
	if _, err := mapping.ParseOverrides([]byte("tables:\n  - table: a.b\n    changelog_partition: op\n")); err == nil || !strings.Contains(err.Error(), "changelog_partition must be a list") {
		t.Errorf("a changelog_partition that is not a list: %v, want an error saying it must be a list", err)
	}
}
