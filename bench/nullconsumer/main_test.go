package main

import (
	"strings"
	"testing"
)

func TestConfigParse(t *testing.T) {
	ok := config{url: "postgres://u@h/db", slot: "s", publication: "p", statusInterval: 1, readBuffer: 1 << 20}
	if err := ok.parse("0/0", "0/16B3748"); err != nil {
		t.Fatalf("parse of a good config: %v", err)
	}
	if ok.stop != 0x16B3748 {
		t.Errorf("stop = %s, want 0/16B3748", ok.stop)
	}
	for _, tc := range []struct {
		name        string
		c           config
		start, stop string
		want        string
	}{
		{"no stop", ok, "0/0", "", "-stop are required"},
		{"bad stop", ok, "0/0", "x", `-stop "x"`},
		{"bad start", ok, "nope", "0/1", `-start "nope"`},
		{"small buffer", config{url: "u", slot: "s", publication: "p", statusInterval: 1, readBuffer: 10}, "0/0", "0/1", "-read-buffer"},
		{"lowat above buffer", config{url: "u", slot: "s", publication: "p", statusInterval: 1, readBuffer: 8192, rcvLowat: 1 << 20}, "0/0", "0/1", "-rcvlowat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			err := c.parse(tc.start, tc.stop)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse(%q, %q) = %v, want an error with %q", tc.start, tc.stop, err, tc.want)
			}
		})
	}
}
