package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// A/B mode (-ab A,B) compares two builds of the bridge in alternating runs
// (A B A B ..., -pairs pairs) over the same prepared WAL (streaming
// workloads, every run on its own slot created before the workload is
// written) or the same prepared table (backfill workloads, every run on a
// new slot). This VM's speed moves by ±10% between runs; alternating spreads
// the drift over both builds, and the median of each is compared.

// abBuild is one side of the comparison.
type abBuild struct {
	Label string `json:"label"` // A or B
	Spec  string `json:"spec"`  // as given: a binary or a git revision
	// Commit is the revision's commit (empty for a binary).
	Commit string    `json:"commit,omitempty"`
	Bin    string    `json:"bin"`
	Build  buildInfo `json:"build"`
}

func (b abBuild) String() string {
	if b.Commit != "" {
		return fmt.Sprintf("%s = %s (%s)", b.Label, b.Spec, b.Commit[:min(10, len(b.Commit))])
	}
	return fmt.Sprintf("%s = %s (sha256 %s)", b.Label, b.Spec, b.Build.SHA256[:min(12, len(b.Build.SHA256))])
}

// abRun is one timed run of one build.
type abRun struct {
	Pair                 int     `json:"pair"`
	Build                string  `json:"build"`
	Target               string  `json:"target"`
	RowsPerSec           float64 `json:"rows_per_sec"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million_rows"`
	PeakRSSMiB           float64 `json:"peak_rss_mib"`
	PeakAnonRSSMiB       float64 `json:"peak_anon_rss_mib"`
	OthersCPUSeconds     float64 `json:"others_cpu_seconds"`
	Detail               any     `json:"detail"` // the bridgeRun or backfillRun
}

// spread is the median, min and max of one figure over one build's runs.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// abFigure compares one figure of one target between the builds.
type abFigure struct {
	Target string `json:"target"`
	Figure string `json:"figure"`
	A      spread `json:"a"`
	B      spread `json:"b"`
	// Ratio is B's median over A's (0 when A's is 0).
	Ratio float64 `json:"ratio_b_to_a"`
}

// abResult is one workload's comparison: the JSON file's content.
type abResult struct {
	Date     string      `json:"date"`
	Mode     string      `json:"mode"`
	Machine  machineInfo `json:"machine"`
	Workload any         `json:"workload"` // workloadInfo or backfillInfo
	Pairs    int         `json:"pairs"`
	Builds   []abBuild   `json:"builds"`
	Runs     []abRun     `json:"runs"`
	Figures  []abFigure  `json:"figures"`
	name     string      // the workload's
}

// abMeasured is a timed run whose figures A/B compares.
type abMeasured interface {
	abRun() abRun
}

func (r bridgeRun) abRun() abRun {
	return abRun{RowsPerSec: r.RowsPerSec, CPUSecondsPerMillion: r.CPUSecondsPerMillion, PeakRSSMiB: r.PeakRSSMiB, PeakAnonRSSMiB: r.PeakAnonRSSMiB, OthersCPUSeconds: r.OthersCPUSeconds}
}

func (r backfillRun) abRun() abRun {
	return abRun{RowsPerSec: r.RowsPerSec, CPUSecondsPerMillion: r.CPUSecondsPerMillion, PeakRSSMiB: r.PeakRSSMiB, PeakAnonRSSMiB: r.PeakAnonRSSMiB, OthersCPUSeconds: r.OthersCPUSeconds}
}

// parseAB splits the -ab value into the two builds' specs.
func parseAB(s string) ([]string, error) {
	specs := strings.Split(s, ",")
	if len(specs) != 2 || strings.TrimSpace(specs[0]) == "" || strings.TrimSpace(specs[1]) == "" {
		return nil, fmt.Errorf("-ab %q: give two builds, A,B: each a git revision (HEAD~1) or a bridge binary (bin/pg2iceberg)", s)
	}
	return []string{strings.TrimSpace(specs[0]), strings.TrimSpace(specs[1])}, nil
}

// isBinary reports whether spec names an executable file (else it is taken
// for a git revision).
func isBinary(spec string) bool {
	fi, err := os.Stat(spec)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	return spread{Median: median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
}

func ratio(b, a float64) float64 {
	if a == 0 {
		return 0
	}
	return b / a
}

// abFigureDef is a figure A/B compares: its name, its value in a run and
// how it prints.
type abFigureDef struct {
	name   string
	get    func(abRun) float64
	format func(float64) string
}

var abFigureDefs = []abFigureDef{
	{"rows/s", func(r abRun) float64 { return r.RowsPerSec }, thousands},
	{"CPU s/M rows", func(r abRun) float64 { return r.CPUSecondsPerMillion }, func(v float64) string { return fmt.Sprintf("%.2f", v) }},
	{"peak RSS MiB", func(r abRun) float64 { return r.PeakRSSMiB }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	{"peak anon RSS MiB", func(r abRun) float64 { return r.PeakAnonRSSMiB }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
}

// abFigures summarises runs per target and figure.
func abFigures(runs []abRun, targets []string) []abFigure {
	var out []abFigure
	for _, t := range targets {
		for _, f := range abFigureDefs {
			var a, b []float64
			for _, r := range runs {
				if r.Target != t {
					continue
				}
				if r.Build == "A" {
					a = append(a, f.get(r))
				} else {
					b = append(b, f.get(r))
				}
			}
			fig := abFigure{Target: t, Figure: f.name, A: spreadOf(a), B: spreadOf(b)}
			fig.Ratio = ratio(fig.B.Median, fig.A.Median)
			out = append(out, fig)
		}
	}
	return out
}

// resolveBuilds turns the -ab specs into binaries: a binary is used as it
// is; a revision is checked out with `git worktree add` into tmp, built with
// go build, and its worktree removed again.
func resolveBuilds(ctx context.Context, tmp string, specs []string) ([]abBuild, error) {
	var out []abBuild
	for i, spec := range specs {
		b := abBuild{Label: string(rune('A' + i)), Spec: spec}
		if isBinary(spec) {
			abs, err := filepath.Abs(spec)
			if err != nil {
				return nil, err
			}
			b.Bin = abs
		} else {
			commit, err := gitOutput(ctx, "rev-parse", "--verify", "--quiet", spec+"^{commit}")
			if err != nil {
				return nil, fmt.Errorf("-ab: %q is neither an executable file nor a git revision of this repository", spec)
			}
			b.Commit = commit
			if b.Bin, err = buildRevision(ctx, tmp, b.Label, commit); err != nil {
				return nil, err
			}
		}
		b.Build = readBuild(b.Bin)
		if b.Commit != "" {
			b.Build.Revision = b.Commit
		}
		logf("A/B: %s", b)
		out = append(out, b)
	}
	return out, nil
}

// buildRevision builds the bridge at commit into tmp/pg2iceberg-<label>.
func buildRevision(ctx context.Context, tmp, label, commit string) (string, error) {
	dir := filepath.Join(tmp, "src-"+label)
	if _, err := gitOutput(ctx, "worktree", "add", "--detach", dir, commit); err != nil {
		return "", err
	}
	defer func() {
		// A fresh context: clean up after a Ctrl-C too.
		if _, err := gitOutput(context.Background(), "worktree", "remove", "--force", dir); err != nil {
			logf("warning: %v (remove it with git worktree remove --force %s)", err, dir)
		}
	}()
	bin := filepath.Join(tmp, "pg2iceberg-"+label)
	logf("A/B: building %s at %s", label, commit[:min(10, len(commit))])
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s at %s: %w\n%s", label, commit, err, out)
	}
	return bin, nil
}

func gitOutput(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// abTargets returns one bridge target per pair, target and build, in the
// order they run: pair by pair, target by target, A then B.
func (e *env) abTargets(w *workload, builds []abBuild) ([]bridgeTarget, []abRun) {
	var ts []bridgeTarget
	var runs []abRun
	for pair := 1; pair <= e.cfg.pairs; pair++ {
		for _, name := range e.cfg.targets {
			for _, b := range builds {
				t := e.target(name, w.id+"_"+strings.ToLower(b.Label)+strconv.Itoa(pair))
				t.bin = b.Bin
				ts = append(ts, t)
				runs = append(runs, abRun{Pair: pair, Build: b.Label, Target: name})
			}
		}
	}
	return ts, runs
}

// abSlots is how many slots a workload of an A/B run holds at once.
func abSlots(c config) int { return c.pairs * len(c.targets) * 2 }

// runAB compares the builds on one workload.
func (e *env) runAB(ctx context.Context, w *workload, builds []abBuild) (*abResult, error) {
	pub := "pub_" + w.id
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	targets, runs := e.abTargets(w, builds)
	defer dropWorkload(conn, pub, w.table, slotNames(targets))
	res := &abResult{Date: e.date, Mode: e.mode(), Machine: e.machine, name: w.name, Pairs: e.cfg.pairs, Builds: builds}
	var time1 func(i int) (abMeasured, error)
	if w.backfill {
		info, err := e.prepareBackfill(ctx, conn, w, pub)
		if err != nil {
			return nil, err
		}
		res.Workload = info
		time1 = func(i int) (abMeasured, error) {
			return e.timeBackfill(ctx, conn, targets[i], pub, w, info.Rows)
		}
	} else {
		if err := e.prepare(ctx, conn, w, pub); err != nil {
			return nil, err
		}
		// Every run's slot exists before the workload is written.
		for _, t := range targets {
			if err := e.setupBridge(ctx, t, pub); err != nil {
				return nil, err
			}
		}
		info, lastPre, end, err := e.writeWorkload(ctx, conn, w)
		if err != nil {
			return nil, err
		}
		res.Workload = info
		time1 = func(i int) (abMeasured, error) {
			return e.timeBridge(ctx, conn, targets[i], pub, w, info.Rows, lastPre, end)
		}
	}
	for i := range targets {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		logf("A/B %s: pair %d, %s, build %s", w.name, runs[i].Pair, runs[i].Target, runs[i].Build)
		m, err := time1(i)
		if err != nil {
			return nil, fmt.Errorf("pair %d, build %s, %s: %w", runs[i].Pair, runs[i].Build, runs[i].Target, err)
		}
		fig := m.abRun()
		fig.Pair, fig.Build, fig.Target, fig.Detail = runs[i].Pair, runs[i].Build, runs[i].Target, m
		runs[i] = fig
	}
	res.Runs = runs
	res.Figures = abFigures(runs, e.cfg.targets)
	return res, nil
}

// runABAll runs the comparison on every workload of the run.
func (e *env) runABAll(ctx context.Context) error {
	builds := e.abBuilds
	var all []*abResult
	for _, name := range e.cfg.workloads {
		w := e.workload(name)
		logf("workload %s: %s; %d pairs", w.name, w.description, e.cfg.pairs)
		res, err := e.runAB(ctx, w, builds)
		if err != nil {
			return fmt.Errorf("workload %s: %w", name, err)
		}
		all = append(all, res)
		printAB(os.Stdout, []*abResult{res})
		if err := e.writeJSON("ab-"+name, res); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stdout, "\n== pg2iceberg bench A/B (%s run, %s)\nmachine: %s\n", e.mode(), e.date, e.machine)
	printAB(os.Stdout, all)
	return nil
}

func printAB(out io.Writer, results []*abResult) {
	if len(results) == 0 {
		return
	}
	for _, b := range results[0].Builds {
		fmt.Fprintf(out, "%s\n", b)
	}
	fmt.Fprintf(out, "%d pairs in alternating runs (A B A B ...); ratio: B's median ÷ A's. rows/s and CPU s/M rows as in the other tables (the bridge's, without start-up for streaming; to the copy's commit for backfill).\n\n", results[0].Pairs)
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\ttarget\tfigure\tA median\tA min\tA max\tB median\tB min\tB max\tB/A\truns (in order)")
	for _, r := range results {
		for _, f := range r.Figures {
			def := abFigureDefs[slices.IndexFunc(abFigureDefs, func(d abFigureDef) bool { return d.name == f.Figure })]
			var seq []string
			for _, run := range r.Runs {
				if run.Target == f.Target {
					seq = append(seq, run.Build+" "+def.format(def.get(run)))
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", r.name, f.Target, f.Figure,
				def.format(f.A.Median), def.format(f.A.Min), def.format(f.A.Max),
				def.format(f.B.Median), def.format(f.B.Min), def.format(f.B.Max), f.Ratio, strings.Join(seq, ", "))
		}
	}
	tw.Flush()
	fmt.Fprintln(out)
}
