package main

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"384MiB", 384 << 20},
		{"2GiB", 2 << 30},
		{"1GB", 1_000_000_000},
		{"512MB", 512_000_000},
		{"512mb", 512_000_000},
		{"1.5GiB", 3 << 29},
		{"1 GiB", 1 << 30},
		{"100000KB", 100_000_000},
		{"65536KiB", 64 << 20},
		{"1TiB", 1 << 40},
		{"2TB", 2_000_000_000_000},
		{"268435456B", 256 << 20},
		{"268435456", 256 << 20},
		{" 64MiB ", 64 << 20},
	} {
		got, err := parseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "write a size"},
		{"1G", `unit "G"`},
		{"512M", `unit "M"`},
		{"1GiBs", `unit "GiBs"`},
		{"-1GiB", "write a size"},
		{"0MiB", "too small"},
		{"512", "too small"},
		{"1B", "too small"},
		{"1GB1", "write a size"},
		{"0x10MiB", "write a size"},
		{"1e3MiB", "write a size"},
		{"9999999999TiB", "too large"},
		{"9223372036854775807KiB", "too large"},
		{"99999999999999999999B", "too large"},
		{"8388608TiB", "too large"},
	} {
		got, err := parseBytes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseBytes(%q) = %d, %v, want an error mentioning %q", tc.in, got, err, tc.want)
		}
	}
}
