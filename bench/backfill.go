package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// copyRun is one COPY of the whole table by psql to /dev/null: the limit of
// a backfill.
type copyRun struct {
	Format     string  `json:"format"` // binary or text
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	// ClientCPUSeconds is psql's rusage; BackendCPUSeconds the server
	// backend's CPU (from /proc) that ran the COPY.
	ClientCPUSeconds  float64 `json:"client_cpu_seconds"`
	BackendCPUSeconds float64 `json:"backend_cpu_seconds"`
	BusyCores         float64 `json:"machine_busy_cores"`
	// OthersCPUSeconds is the machine's busy time minus psql's and its
	// backend's: other processes competing for the CPUs.
	OthersCPUSeconds float64 `json:"others_cpu_seconds"`
	Command          string  `json:"command"`
}

// backfillInfo describes the table copied.
type backfillInfo struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Table       string  `json:"table"`
	Columns     int     `json:"columns"`
	Rows        int64   `json:"rows"`
	TableBytes  int64   `json:"table_bytes"` // pg_table_size: heap, FSM, VM, TOAST
	FillSeconds float64 `json:"fill_seconds"`
}

// backfillRun is one bridge's initial copy of the table, on a new slot.
type backfillRun struct {
	Target    string `json:"target"`
	Warehouse string `json:"warehouse"`
	Slot      string `json:"slot"`
	Rows      int64  `json:"rows"`
	Workers   int    `json:"workers"`
	Chunks    int    `json:"chunks"`
	// Seconds runs from the bridge's start to its "streaming" log line,
	// which follows the commit of the copy; it is split into start-up (to
	// "copy started": catalog, tables, slot, connections), copy (to "copy
	// finished": every row read and written) and commit (closing the
	// files, the key index, the catalog commits).
	Seconds        float64 `json:"seconds"`
	StartupSeconds float64 `json:"startup_seconds"`
	CopySeconds    float64 `json:"copy_seconds"`
	CommitSeconds  float64 `json:"commit_seconds"`
	RowsPerSec     float64 `json:"rows_per_sec"`
	// RowsPerSecWithoutStartup counts copy and commit only.
	RowsPerSecWithoutStartup float64 `json:"rows_per_sec_without_startup"`
	RatioToBinary            float64 `json:"ratio_to_binary_copy"`
	RatioToText              float64 `json:"ratio_to_text_copy"`
	// CPUSeconds is the bridge's CPU (from /proc) at the "streaming" line.
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_million_rows"`
	// BackendCPUSeconds is the CPU of the server processes serving the
	// bridge (copy workers, walsender, main connection) until then.
	BackendCPUSeconds           float64 `json:"backend_cpu_seconds"`
	BackendCPUSecondsPerMillion float64 `json:"backend_cpu_seconds_per_million_rows"`
	BackendProcesses            int     `json:"backend_processes"`
	BusyCores                   float64 `json:"machine_busy_cores"`
	OthersCPUSeconds            float64 `json:"others_cpu_seconds"`
	// PeakRSSMiB is rusage.Maxrss (the whole life, stop included);
	// CopyPeakRSSMiB the VmHWM when the copy was committed.
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
	CopyPeakRSSMiB float64 `json:"copy_peak_rss_mib"`
	// PeakAnonRSSMiB is the highest RssAnon sampled (see watchAnon).
	PeakAnonRSSMiB float64 `json:"peak_anon_rss_mib"`
	// StopSeconds is from the "streaming" line to the exit after SIGINT.
	StopSeconds float64 `json:"stop_seconds"`
	// MetricRows is pg2iceberg_backfill_rows for the table at the end.
	MetricRows         int64        `json:"metric_backfill_rows"`
	ParquetFiles       int          `json:"parquet_files"`
	ParquetBytes       int64        `json:"parquet_bytes"`
	ParquetBytesPerRow float64      `json:"parquet_bytes_per_row"`
	Snapshots          int          `json:"snapshots"`
	DataFiles          int          `json:"data_files"`
	DeleteFiles        int          `json:"delete_files"`
	Tables             []tableStats `json:"tables"`
	Profile            string       `json:"profile,omitempty"`
}

// backfillResult is one backfill workload's figures: the JSON file's
// content.
type backfillResult struct {
	Date     string       `json:"date"`
	Mode     string       `json:"mode"`
	Machine  machineInfo  `json:"machine"`
	Build    buildInfo    `json:"bridge_build"`
	Workload backfillInfo `json:"workload"`
	Copies   []copyRun    `json:"copy_runs"`
	// BinaryRowsPerSec and TextRowsPerSec are the faster run of each.
	BinaryRowsPerSec float64       `json:"binary_copy_rows_per_sec"`
	TextRowsPerSec   float64       `json:"text_copy_rows_per_sec"`
	Bridge           []backfillRun `json:"bridge_runs"`
	Bars             []barCheck    `json:"bars"`
}

// runBackfill fills the table, times psql's COPY to /dev/null in binary and
// text, then each bridge's initial copy on a slot of its own, then the
// COPYs again: the faster run of each format is its limit.
func (e *env) runBackfill(ctx context.Context, w *workload) (*backfillResult, error) {
	pub := "pub_" + w.id
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	var targets []bridgeTarget
	for _, name := range e.cfg.targets {
		targets = append(targets, e.target(name, w.id))
	}
	defer dropWorkload(conn, pub, w.table, slotNames(targets))
	info, err := e.prepareBackfill(ctx, conn, w, pub)
	if err != nil {
		return nil, err
	}
	res := &backfillResult{Date: e.date, Mode: e.mode(), Machine: e.machine, Build: e.build, Workload: info}
	copies := func() error {
		for _, format := range []string{"binary", "text"} {
			c, err := e.runCopy(ctx, w.table, format, info.Rows)
			if err != nil {
				return err
			}
			logf("COPY (FORMAT %s) to /dev/null: %.2fs, %.0f rows/s, backend CPU %.2fs, psql CPU %.2fs", format, c.Seconds, c.RowsPerSec, c.BackendCPUSeconds, c.ClientCPUSeconds)
			res.Copies = append(res.Copies, c)
			if format == "binary" {
				res.BinaryRowsPerSec = max(res.BinaryRowsPerSec, c.RowsPerSec)
			} else {
				res.TextRowsPerSec = max(res.TextRowsPerSec, c.RowsPerSec)
			}
		}
		return nil
	}
	if err := copies(); err != nil {
		return nil, err
	}
	for _, t := range targets {
		br, err := e.timeBackfill(ctx, conn, t, pub, w, info.Rows)
		if err != nil {
			return nil, err
		}
		res.Bridge = append(res.Bridge, br)
	}
	if err := copies(); err != nil {
		return nil, err
	}
	for i := range res.Bridge {
		res.Bridge[i].RatioToBinary = res.Bridge[i].RowsPerSec / res.BinaryRowsPerSec
		res.Bridge[i].RatioToText = res.Bridge[i].RowsPerSec / res.TextRowsPerSec
	}
	res.Bars = backfillBars(res)
	return res, nil
}

// prepareBackfill fills the table and runs VACUUM ANALYZE (hint bits and
// visibility map set, pg_class.reltuples right for the copy's estimate),
// creates the publication and runs a CHECKPOINT.
func (e *env) prepareBackfill(ctx context.Context, conn *pgx.Conn, w *workload, pub string) (backfillInfo, error) {
	fillStart := time.Now()
	if err := e.prepare(ctx, conn, w, pub); err != nil {
		return backfillInfo{}, err
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return backfillInfo{}, fmt.Errorf("checkpoint: %w", err)
	}
	info := backfillInfo{Name: w.name, Description: w.description, Table: w.table, Columns: w.columns, FillSeconds: time.Since(fillStart).Seconds()}
	if err := conn.QueryRow(ctx, "SELECT count(*), pg_table_size($1::regclass) FROM "+w.table, w.table).Scan(&info.Rows, &info.TableBytes); err != nil {
		return backfillInfo{}, fmt.Errorf("size of %s: %w", w.table, err)
	}
	logf("table %s: %d rows, %.0f MiB", w.table, info.Rows, float64(info.TableBytes)/(1<<20))
	return info, nil
}

// copyTextSession gives psql's text COPY the session settings the bridge
// reads values with (replication.SessionParams), so both produce the same
// text.
const copyTextSession = "-c DateStyle=ISO,YMD -c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3 -c bytea_output=hex"

// runCopy times psql from the server's installation running
// COPY <table> TO STDOUT (FORMAT <format>) with its output on /dev/null.
func (e *env) runCopy(ctx context.Context, table, format string, rows int64) (copyRun, error) {
	psql := filepath.Join(e.pg.BinDir, "psql")
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", e.pg.Host, "-p", strconv.Itoa(e.pg.Port), "-U", e.pg.SuperUser, "-d", benchDB,
		"-c", "COPY " + table + " TO STDOUT (FORMAT " + format + ")"}
	app := "bench-copy-" + format
	cmd := exec.CommandContext(ctx, psql, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+e.pg.SuperPassword, "PGAPPNAME="+app, "PGOPTIONS="+copyTextSession)
	// cmd.Stdout stays nil: os/exec opens /dev/null for it.
	bw := e.watchBackends(ctx, app)
	m, err := runMeasured(cmd, func() float64 { cpu, _ := bw.seconds(); return cpu })
	if err != nil {
		return copyRun{}, fmt.Errorf("COPY (FORMAT %s): %w", format, err)
	}
	return copyRun{
		Format: format, Seconds: m.wall, RowsPerSec: float64(rows) / m.wall,
		ClientCPUSeconds: m.client, BackendCPUSeconds: m.server,
		BusyCores:        m.busyCores,
		OthersCPUSeconds: m.others,
		Command:          psql + " " + strings.Join(args, " "),
	}, nil
}

var (
	copyStartedRE  = regexp.MustCompile(` chunks=(\d+) .*\bworkers=(\d+)`)
	copyFinishedRE = regexp.MustCompile(` rows=(\d+) `)
)

// timeBackfill starts the bridge on a new slot and times it from its start
// until the initial copy is committed (its "streaming" log line, which
// follows the commit), then stops it with SIGINT and checks the mirror.
func (e *env) timeBackfill(ctx context.Context, conn *pgx.Conn, t bridgeTarget, pub string, w *workload, rows int64) (backfillRun, error) {
	profile := e.profile(w.name + "-" + t.name)
	logf("bridge %s: initial copy", t.name)
	cpu0 := machineCPU()
	bw := e.watchBackends(ctx, "pg2iceberg")
	b, err := e.startBridge(t, pub, true, profile)
	if err != nil {
		return backfillRun{}, err
	}
	defer b.stop(time.Minute)
	if err := b.waitStreaming(ctx, 2*time.Hour); err != nil {
		return backfillRun{}, err
	}
	cpu1 := machineCPU()
	bcpu, bprocs := bw.seconds()
	r := backfillRun{
		Target: t.name, Warehouse: t.warehouse, Slot: t.slot, Rows: rows,
		Seconds:           b.streamingAt.Sub(b.started).Seconds(),
		CPUSeconds:        b.streamCPU,
		BackendCPUSeconds: bcpu,
		BackendProcesses:  bprocs,
		CopyPeakRSSMiB:    b.streamHWM,
		BusyCores:         busyCores(cpu0, cpu1, b.streamingAt.Sub(b.started).Seconds()),
		OthersCPUSeconds:  max(0, cpu1.busy-cpu0.busy-b.streamCPU-bcpu),
	}
	started, ok1 := b.mark("copy started")
	finished, ok2 := b.mark("copy finished")
	if !ok1 || !ok2 {
		return backfillRun{}, fmt.Errorf("the bridge streamed without logging \"copy started\" and \"copy finished\": no initial copy?%s", b.logTail())
	}
	r.StartupSeconds = started.at.Sub(b.started).Seconds()
	r.CopySeconds = finished.at.Sub(started.at).Seconds()
	r.CommitSeconds = b.streamingAt.Sub(finished.at).Seconds()
	if m := copyStartedRE.FindStringSubmatch(started.line); m != nil {
		r.Chunks, _ = strconv.Atoi(m[1])
		r.Workers, _ = strconv.Atoi(m[2])
	}
	if m := copyFinishedRE.FindStringSubmatch(finished.line); m != nil {
		if n, _ := strconv.ParseInt(m[1], 10, 64); n != rows {
			return backfillRun{}, fmt.Errorf("the bridge copied %d rows, the table holds %d%s", n, rows, b.logTail())
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if v, err := b.metric(client, fmt.Sprintf("pg2iceberg_backfill_rows{table=%q}", w.table)); err != nil {
		logf("warning: /metrics: %v", err)
	} else if r.MetricRows = int64(v); r.MetricRows != rows {
		logf("warning: /metrics says %d rows copied, the table holds %d", r.MetricRows, rows)
	}

	if err := e.stopAwake(ctx, b); err != nil {
		return backfillRun{}, err
	}
	r.StopSeconds = b.exitedAt.Sub(b.streamingAt).Seconds()
	ru := b.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.PeakRSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	b.mu.Lock()
	r.PeakAnonRSSMiB = b.peakAnon
	b.mu.Unlock()
	if profile != "" {
		r.Profile = profile + ".cpu.pprof"
	}
	r.RowsPerSec = float64(rows) / r.Seconds
	r.RowsPerSecWithoutStartup = float64(rows) / (r.CopySeconds + r.CommitSeconds)
	r.CPUSecondsPerMillion = r.CPUSeconds / float64(rows) * 1e6
	r.BackendCPUSecondsPerMillion = r.BackendCPUSeconds / float64(rows) * 1e6

	// Everything in the warehouse is new: the table was created by this run.
	empty := &warehouseState{files: map[string]int64{}, snaps: map[string]map[int64]struct{}{}}
	after, err := e.snapshotWarehouse(ctx, t, w)
	if err != nil {
		return backfillRun{}, err
	}
	var br bridgeRun
	br.Rows = rows
	e.diffWarehouse(&br, empty, after, 0)
	r.ParquetFiles, r.ParquetBytes, r.ParquetBytesPerRow = br.ParquetFiles, br.ParquetBytes, br.ParquetBytesPerRow
	r.Snapshots, r.DataFiles, r.DeleteFiles, r.Tables = br.Snapshots, br.DataFiles, br.DeleteFiles, br.Tables
	if err := e.checkMirror(ctx, conn, w, r.Tables); err != nil {
		return backfillRun{}, fmt.Errorf("%s: %w", t.name, err)
	}
	logf("bridge %s: copy committed %.2fs after start (start-up %.2fs, copy %.2fs, commit %.2fs), %.0f rows/s, %d workers, CPU %.2fs (%.2f s/M rows), server backends %.2fs, peak RSS %.0f MiB (%.0f at the commit), %.1f Parquet B/row in %d files",
		t.name, r.Seconds, r.StartupSeconds, r.CopySeconds, r.CommitSeconds, r.RowsPerSec, r.Workers, r.CPUSeconds, r.CPUSecondsPerMillion, r.BackendCPUSeconds, r.PeakRSSMiB, r.CopyPeakRSSMiB, r.ParquetBytesPerRow, r.ParquetFiles)
	return r, nil
}

const backfillHeader = "workload\tconsumer\trows\tseconds\trows/s\tratio to binary\tratio to text\tCPU s/M rows\tserver CPU s/M rows\tpeak RSS MiB\tParquet B/row\tfiles\tothers' CPU s"

func writeBackfillRows(w io.Writer, r *backfillResult) {
	n := map[string]int{}
	for _, c := range r.Copies {
		n[c.Format]++
		toBinary, toText := "(limit)", "-"
		if c.Format == "text" {
			toBinary, toText = fmt.Sprintf("%.2f", c.RowsPerSec/r.BinaryRowsPerSec), "(limit)"
		}
		fmt.Fprintf(w, "%s\tCOPY %s #%d\t%d\t%.2f\t%s\t%s\t%s\t%.2f (psql)\t%.2f\t-\t-\t-\t%.2f\n",
			r.Workload.Name, c.Format, n[c.Format], r.Workload.Rows, c.Seconds, thousands(c.RowsPerSec), toBinary, toText,
			c.ClientCPUSeconds/float64(r.Workload.Rows)*1e6, c.BackendCPUSeconds/float64(r.Workload.Rows)*1e6, c.OthersCPUSeconds)
	}
	for _, b := range r.Bridge {
		fmt.Fprintf(w, "%s\tpg2iceberg %s (%d workers)\t%d\t%.2f (%.2f start, %.2f copy, %.2f commit)\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.1f\t%d\t%.2f\n",
			r.Workload.Name, b.Target, b.Workers, b.Rows, b.Seconds, b.StartupSeconds, b.CopySeconds, b.CommitSeconds, thousands(b.RowsPerSec),
			b.RatioToBinary, b.RatioToText, b.CPUSecondsPerMillion, b.BackendCPUSecondsPerMillion, b.PeakRSSMiB, b.ParquetBytesPerRow, b.ParquetFiles, b.OthersCPUSeconds)
	}
}

func printBackfill(out io.Writer, r *backfillResult) {
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, backfillHeader)
	writeBackfillRows(tw, r)
	tw.Flush()
	fmt.Fprintln(out)
}
