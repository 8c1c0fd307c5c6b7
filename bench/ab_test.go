package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1}, 10},
	} {
		in := slices.Clone(tc.in)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(tc.in, in) {
			t.Errorf("median(%v) reordered its argument to %v", in, tc.in)
		}
	}
}

func TestABFigures(t *testing.T) {
	runs := []abRun{
		{Pair: 1, Build: "A", Target: "local", RowsPerSec: 100, CPUSecondsPerMillion: 3, PeakRSSMiB: 200, PeakAnonRSSMiB: 140},
		{Pair: 1, Build: "B", Target: "local", RowsPerSec: 120, CPUSecondsPerMillion: 2, PeakRSSMiB: 210, PeakAnonRSSMiB: 150},
		{Pair: 1, Build: "A", Target: "s3", RowsPerSec: 50, CPUSecondsPerMillion: 4, PeakRSSMiB: 300, PeakAnonRSSMiB: 240},
		{Pair: 1, Build: "B", Target: "s3", RowsPerSec: 40, CPUSecondsPerMillion: 5, PeakRSSMiB: 300, PeakAnonRSSMiB: 240},
		{Pair: 2, Build: "A", Target: "local", RowsPerSec: 90, CPUSecondsPerMillion: 3.5, PeakRSSMiB: 220, PeakAnonRSSMiB: 160},
		{Pair: 2, Build: "B", Target: "local", RowsPerSec: 150, CPUSecondsPerMillion: 2.2, PeakRSSMiB: 190, PeakAnonRSSMiB: 130},
		{Pair: 3, Build: "A", Target: "local", RowsPerSec: 110, CPUSecondsPerMillion: 2.5, PeakRSSMiB: 210, PeakAnonRSSMiB: 150},
		{Pair: 3, Build: "B", Target: "local", RowsPerSec: 135, CPUSecondsPerMillion: 2.4, PeakRSSMiB: 200, PeakAnonRSSMiB: 140},
	}
	got := abFigures(runs, []string{"local", "s3"})
	want := []abFigure{
		{Target: "local", Figure: "rows/s", A: spread{100, 90, 110}, B: spread{135, 120, 150}, Ratio: 1.35},
		{Target: "local", Figure: "CPU s/M rows", A: spread{3, 2.5, 3.5}, B: spread{2.2, 2, 2.4}, Ratio: 2.2 / 3},
		{Target: "local", Figure: "peak RSS MiB", A: spread{210, 200, 220}, B: spread{200, 190, 210}, Ratio: 200.0 / 210},
		{Target: "local", Figure: "peak anon RSS MiB", A: spread{150, 140, 160}, B: spread{140, 130, 150}, Ratio: 140.0 / 150},
		{Target: "s3", Figure: "rows/s", A: spread{50, 50, 50}, B: spread{40, 40, 40}, Ratio: 0.8},
		{Target: "s3", Figure: "CPU s/M rows", A: spread{4, 4, 4}, B: spread{5, 5, 5}, Ratio: 1.25},
		{Target: "s3", Figure: "peak RSS MiB", A: spread{300, 300, 300}, B: spread{300, 300, 300}, Ratio: 1},
		{Target: "s3", Figure: "peak anon RSS MiB", A: spread{240, 240, 240}, B: spread{240, 240, 240}, Ratio: 1},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	nearSpread := func(a, b spread) bool { return near(a.Median, b.Median) && near(a.Min, b.Min) && near(a.Max, b.Max) }
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.Target == w.Target && g.Figure == w.Figure && nearSpread(g.A, w.A) && nearSpread(g.B, w.B) && near(g.Ratio, w.Ratio)
	}
	if !ok {
		t.Errorf("abFigures =\n%v\nwant\n%v", got, want)
	}
	// A build without a figure (A's median 0) gives no ratio, not +Inf
	// (which JSON cannot hold).
	if r := ratio(5, 0); r != 0 {
		t.Errorf("ratio(5, 0) = %v, want 0", r)
	}
}

func TestParseAB(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"HEAD~1,HEAD", []string{"HEAD~1", "HEAD"}},
		{" main , bin/pg2iceberg ", []string{"main", "bin/pg2iceberg"}},
		{"HEAD,HEAD", []string{"HEAD", "HEAD"}},
	} {
		got, err := parseAB(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseAB(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "HEAD", "HEAD,", ",HEAD", "a,b,c"} {
		if got, err := parseAB(in); err == nil {
			t.Errorf("parseAB(%q) = %q, want an error", in, got)
		}
	}
}

func TestIsBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pg2iceberg")
	plain := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{exe, true},
		{plain, false}, // not executable: a revision (and git will say it is none)
		{dir, false},
		{"HEAD~1", false},
		{filepath.Join(dir, "missing"), false},
	} {
		if got := isBinary(tc.spec); got != tc.want {
			t.Errorf("isBinary(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestValidateAB(t *testing.T) {
	base := config{workloads: []string{"update"}, targets: []string{"local"}, txnRows: 1000, freshnessTxnRows: 1, freshnessRate: 1,
		backfillRows: 1, backfillWide: 1, updateTableRows: 1000, deleteTableRows: 1000, pairs: 3}
	for _, tc := range []struct {
		name string
		ab   string
		set  []string
		mod  func(*config)
		want string // "" for no error
	}{
		{"not A/B", "", nil, nil, ""},
		{"A/B", "HEAD~1,HEAD", []string{"ab", "pairs"}, nil, ""},
		{"pairs without ab", "", []string{"pairs"}, nil, "-pairs is for A/B runs"},
		{"one build", "HEAD", []string{"ab"}, nil, "give two builds"},
		{"no pairs", "HEAD~1,HEAD", []string{"ab", "pairs"}, func(c *config) { c.pairs = 0 }, "-pairs must be at least 1"},
		{"with -bin", "HEAD~1,HEAD", []string{"ab", "bin"}, nil, "-bin does not apply"},
		{"with -pprof", "HEAD~1,HEAD", []string{"ab", "pprof"}, nil, "-pprof does not apply"},
		{"no workload", "HEAD~1,HEAD", []string{"ab"}, func(c *config) { c.workloads = nil }, "at least one workload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.ab = tc.ab
			c.set = map[string]bool{}
			for _, f := range tc.set {
				c.set[f] = true
			}
			if tc.mod != nil {
				tc.mod(&c)
			}
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
