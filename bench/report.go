package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// machineInfo says where the figures come from.
type machineInfo struct {
	CPUModel         string            `json:"cpu_model"`
	CPUs             int               `json:"cpus"`
	MemoryGiB        float64           `json:"memory_gib"`
	Kernel           string            `json:"kernel"`
	GoVersion        string            `json:"go_version"`
	Postgres         string            `json:"postgres"`
	PostgresSettings map[string]string `json:"postgres_settings"`
	RecvLogical      string            `json:"pg_recvlogical"`
	LoadAvgAtStart   string            `json:"loadavg_at_start"`
}

func (m machineInfo) String() string {
	return fmt.Sprintf("%d CPUs (%s), %.0f GiB RAM, Linux %s, %s, %s", m.CPUs, m.CPUModel, m.MemoryGiB, m.Kernel, m.Postgres, m.GoVersion)
}

func readMachine() machineInfo {
	m := machineInfo{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.MemoryGiB = kb / (1 << 20)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvgAtStart = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command(recvlogical, "--version").Output(); err == nil {
		m.RecvLogical = strings.TrimSpace(string(out))
	}
	return m
}

// serverVersion reads the server version and the settings that shape the
// figures.
func (e *env) serverVersion(ctx context.Context) (string, error) {
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	e.machine.PostgresSettings = map[string]string{}
	for _, s := range []string{"logical_decoding_work_mem", "shared_buffers", "fsync", "synchronous_commit", "full_page_writes", "wal_level", "max_wal_size"} {
		var val string
		if err := conn.QueryRow(ctx, "SHOW "+s).Scan(&val); err != nil {
			return "", fmt.Errorf("show %s: %w", s, err)
		}
		e.machine.PostgresSettings[s] = val
	}
	return "PostgreSQL " + v, nil
}

// buildInfo identifies the bridge binary measured.
type buildInfo struct {
	Path       string `json:"path"`
	GoVersion  string `json:"go_version"`
	Revision   string `json:"vcs_revision"`
	Modified   bool   `json:"vcs_modified"`
	CommitTime string `json:"vcs_time"`
	SHA256     string `json:"sha256"`
	// ExtraEnv is what -bridge-env added to the bridge's environment.
	ExtraEnv []string `json:"extra_env,omitempty"`
	// ExtraArgs is what -bridge-args added to every pg2iceberg run.
	ExtraArgs   []string `json:"extra_args,omitempty"`
	FlushRows   int      `json:"default_flush_rows"`
	FlushBytes  int64    `json:"default_flush_bytes"`
	FlushPeriod string   `json:"default_flush_interval"`
}

func readBuild(path string) buildInfo {
	b := buildInfo{Path: path, FlushRows: iceberg.DefaultFlushRows, FlushBytes: iceberg.DefaultFlushBytes, FlushPeriod: iceberg.DefaultFlushInterval.String()}
	if sum, err := fileSHA256(path); err == nil {
		b.SHA256 = sum
	}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		b.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "vcs.time":
				b.CommitTime = s.Value
			}
		}
	}
	if b.Revision == "" {
		// Built with -buildvcs=false: read the checked-out commit from .git
		// (the working tree may differ from it).
		b.Revision = gitHead()
	}
	return b
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// gitHead reads the commit checked out in ./.git without running git.
func gitHead() string {
	head, err := os.ReadFile(".git/HEAD")
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok {
		return strings.TrimSpace(string(head))
	}
	if b, err := os.ReadFile(filepath.Join(".git", ref)); err == nil {
		return strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(".git/packed-refs"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if h, r, ok := strings.Cut(line, " "); ok && r == ref {
				return h
			}
		}
	}
	return ""
}

// barCheck is one of issue 7's bars applied to one figure.
type barCheck struct {
	Bar    string  `json:"bar"`
	Target string  `json:"target,omitempty"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
}

// ratioBars are the bars on the ratio to pg_recvlogical.
var ratioBars = map[string]float64{"insert": 0.9, "update": 0.7, "delete": 0.7, "bigtxn": 0.8}

const (
	rssBar           = 512.0 // MiB
	insertCPUBar     = 10.0  // CPU s per million inserted rows
	backfillRatioBar = 0.6   // backfill rows/s ÷ COPY (FORMAT binary) rows/s
)

func workloadBars(r *workloadResult) []barCheck {
	var out []barCheck
	for _, b := range r.Bridge {
		if bar, ok := ratioBars[r.Workload.Name]; ok {
			out = append(out, barCheck{Bar: fmt.Sprintf("%s: ratio to pg_recvlogical >= %.1f", r.Workload.Name, bar), Target: b.Target, Value: b.RatioToLimit, Pass: b.RatioToLimit >= bar})
		}
		if r.Workload.Name == "insert" {
			v := b.CPUSecondsPerMillionWithStartup
			out = append(out, barCheck{Bar: fmt.Sprintf("insert: bridge CPU <= %.0f s per million rows (rusage, start-up included)", insertCPUBar), Target: b.Target, Value: v, Pass: v <= insertCPUBar})
		}
		out = append(out, barCheck{Bar: fmt.Sprintf("%s: peak RSS <= %.0f MiB", r.Workload.Name, rssBar), Target: b.Target, Value: b.PeakRSSMiB, Pass: b.PeakRSSMiB <= rssBar})
	}
	return out
}

// backfillBars applies the backfill bar to the 4-column table (the wide
// one has none) and the RSS bar to both.
func backfillBars(r *backfillResult) []barCheck {
	var out []barCheck
	for _, b := range r.Bridge {
		if r.Workload.Name == "backfill" {
			out = append(out, barCheck{Bar: fmt.Sprintf("backfill: rows/s to COPY (FORMAT binary) >= %.1f", backfillRatioBar), Target: b.Target, Value: b.RatioToBinary, Pass: b.RatioToBinary >= backfillRatioBar})
		}
		out = append(out, barCheck{Bar: fmt.Sprintf("%s: peak RSS <= %.0f MiB", r.Workload.Name, rssBar), Target: b.Target, Value: b.PeakRSSMiB, Pass: b.PeakRSSMiB <= rssBar})
	}
	return out
}

func freshnessBars(r *freshnessResult) []barCheck {
	var out []barCheck
	limit := iceberg.DefaultFlushInterval.Seconds() + 1
	for _, run := range r.Runs {
		out = append(out, barCheck{Bar: fmt.Sprintf("freshness: p50 <= flush interval + 1s (%.0fs)", limit), Target: run.Target, Value: run.P50, Pass: run.P50 <= limit})
		out = append(out, barCheck{Bar: "freshness: peak RSS <= 512 MiB", Target: run.Target, Value: run.PeakRSSMiB, Pass: run.PeakRSSMiB <= rssBar})
	}
	return out
}

func writeJSONFile(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

const tableHeader = "workload\tconsumer\trows\tseconds\trows/s\tratio (to null)\tCPU s/M rows\tpeak RSS MiB\tParquet B/row\tfiles (data+del)\tsnapshots\tflushes\twalsender CPU s\twalsender CPU s/M rows\tothers' CPU s"

func writeWorkloadRows(w io.Writer, r *workloadResult) {
	perM := func(cpu float64) float64 { return cpu / float64(r.Workload.Rows) * 1e6 }
	limitRow := func(name, ratio string, l limitRun) {
		fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%s\t%s\t%.2f (client)\t-\t-\t-\t-\t-\t%.2f\t%.2f\t%.2f\n",
			r.Workload.Name, name, r.Workload.Rows, l.Seconds, thousands(l.RowsPerSec), ratio, perM(l.ClientCPUSeconds), l.WalsenderCPUSeconds, l.WalsenderCPUSecondsPerMillion, l.OthersCPUSeconds)
	}
	for i, l := range r.Limit {
		limitRow(fmt.Sprintf("pg_recvlogical #%d", i+1), "(limit)", l)
	}
	if n := r.NullConsumer; n != nil {
		limitRow("null consumer", fmt.Sprintf("%.2f", n.RowsPerSec/r.LimitRowsPerSec), n.limitRun)
	}
	for _, b := range r.Bridge {
		ratio := fmt.Sprintf("%.2f", b.RatioToLimit)
		if b.RatioToNullConsumer > 0 {
			ratio += fmt.Sprintf(" (%.2f)", b.RatioToNullConsumer)
		}
		fmt.Fprintf(w, "%s\tpg2iceberg %s\t%d\t%.2f (+%.2f start)\t%s\t%s\t%.2f (%.2f)\t%.0f\t%.1f\t%d (%d+%d)\t%d\t%d\t%.2f\t%.2f\t%.2f\n",
			r.Workload.Name, b.Target, b.Rows, b.StreamSeconds, b.StartupSeconds, thousands(b.RowsPerSec), ratio,
			b.CPUSecondsPerMillion, b.CPUSecondsPerMillionWithStartup, b.PeakRSSMiB, b.ParquetBytesPerRow,
			b.ParquetFiles, b.DataFiles, b.DeleteFiles, b.Snapshots, b.Flushes, b.WalsenderCPUSeconds, b.WalsenderCPUSecondsPerMillion, b.OthersCPUSeconds)
	}
}

func printWorkload(out io.Writer, r *workloadResult) {
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, tableHeader)
	writeWorkloadRows(tw, r)
	tw.Flush()
	fmt.Fprintln(out)
}

func printSummary(out io.Writer, e *env, results []*workloadResult, backfills []*backfillResult, fresh *freshnessResult) {
	fmt.Fprintf(out, "\n== pg2iceberg bench (%s run, %s)\n", e.mode(), e.date)
	fmt.Fprintf(out, "machine: %s\n", e.machine)
	rev := e.build.Revision + " (checked-out commit; the working tree may differ), sha256 " + e.build.SHA256[:min(12, len(e.build.SHA256))]
	if e.build.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(out, "bridge: %s built from %s, default flush settings (%d rows, %d bytes, %s)\n",
		e.build.Path, rev, e.build.FlushRows, e.build.FlushBytes, e.build.FlushPeriod)
	if len(e.build.ExtraEnv)+len(e.build.ExtraArgs) > 0 {
		fmt.Fprintf(out, "bridge changed for an experiment: env %v, args %v\n", e.build.ExtraEnv, e.build.ExtraArgs)
	}
	var bars []barCheck
	if len(results) > 0 {
		fmt.Fprintf(out, "\nrows/s of the bridge: from its \"streaming\" log line to its exit after the last commit; ratio: to the faster pg_recvlogical run (in brackets: to the null consumer). CPU s/M rows: the consumer's; the bridge's without start-up (with it, from rusage). walsender CPU: the server process serving the consumer; the null consumer (bench/nullconsumer) discards what it receives and wakes up for 256 KiB at a time.\n\n")
		tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, tableHeader)
		for _, r := range results {
			writeWorkloadRows(tw, r)
			bars = append(bars, r.Bars...)
		}
		tw.Flush()
	}
	if len(backfills) > 0 {
		fmt.Fprintf(out, "\ninitial copy: psql COPY <table> TO STDOUT to /dev/null, twice per format, against the bridge on a new slot from its start to the copy's commit; ratios to the faster COPY of each format. CPU s/M rows: the consumer's (psql, or the bridge until the commit); server: the backends serving it.\n\n")
		tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, backfillHeader)
		for _, r := range backfills {
			writeBackfillRows(tw, r)
			bars = append(bars, r.Bars...)
		}
		tw.Flush()
	}
	if fresh != nil {
		fmt.Fprintf(out, "\nfreshness (commit to visible in the catalog, %s poll), default flush settings:\n", freshPoll)
		tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "target\trows/s\ttransactions\tp50 s\tp90 s\tp99 s\tmax s\tsnapshots\tCPU s/M rows\tpeak RSS MiB")
		for _, f := range fresh.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%.2f\t%.0f\n", f.Target, thousands(f.RowsPerSec), f.Transactions, f.P50, f.P90, f.P99, f.Max, f.Snapshots, f.CPUSecondsPerMRow, f.PeakRSSMiB)
		}
		tw.Flush()
		bars = append(bars, fresh.Bars...)
	}
	fmt.Fprintln(out, "\nbars:")
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	for _, b := range bars {
		verdict := "PASS"
		if !b.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\n", b.Bar, b.Target, b.Value, verdict)
	}
	tw.Flush()
}
