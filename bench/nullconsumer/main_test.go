package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// block returns the text of src between the first start and the next end.
func block(t *testing.T, path, start, end string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), start)
	if !ok {
		t.Fatalf("%s has no %q: update this test and the null consumer with it", path, start)
	}
	body, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("%s: no %q after %q", path, end, start)
	}
	return body
}

func TestSessionParamsAreTheBridges(t *testing.T) {
	body := block(t, "../../replication/conn.go", "var sessionParams = map[string]string{", "\n}")
	re := regexp.MustCompile(`"([^"]+)":\s*"([^"]*)"`)
	bridge := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		bridge[m[1]] = m[2]
	}
	// Our own name, so the bench finds this consumer's walsender.
	delete(bridge, "application_name")
	if len(bridge) != len(sessionParams) {
		t.Errorf("sessionParams = %v, the bridge's %v", sessionParams, bridge)
	}
	for k, v := range bridge {
		if sessionParams[k] != v {
			t.Errorf("sessionParams[%q] = %q, the bridge's %q", k, sessionParams[k], v)
		}
	}
}

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
