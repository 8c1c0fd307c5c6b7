package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// markerBytes is the size of the logical message written after the
// workload, and markerGuard the margin below it (see runWorkload).
const (
	markerBytes = 256 << 10
	markerGuard = 64 << 10
)

// workloadInfo describes what was written.
type workloadInfo struct {
	Name            string  `json:"name"`
	Description     string  `json:"description"`
	Table           string  `json:"table"`
	Columns         int     `json:"columns"`
	PrefilledRows   int     `json:"prefilled_rows"`
	Rows            int64   `json:"rows"`
	Transactions    int     `json:"transactions"`
	GenerateSeconds float64 `json:"generate_seconds"`
	StartLSN        string  `json:"start_lsn"`
	EndLSN          string  `json:"end_lsn"`
	WALBytes        int64   `json:"wal_bytes"`
	WALBytesPerRow  float64 `json:"wal_bytes_per_row"`
}

// workloadResult is one workload's figures: the JSON file's content.
type workloadResult struct {
	Date            string       `json:"date"`
	Mode            string       `json:"mode"`
	Machine         machineInfo  `json:"machine"`
	Build           buildInfo    `json:"bridge_build"`
	Workload        workloadInfo `json:"workload"`
	Limit           []limitRun   `json:"limit_runs"`
	LimitRowsPerSec float64      `json:"limit_rows_per_sec"`
	// NullConsumer is bench/nullconsumer over the same WAL: what the
	// walsender needs for a client that discards everything and wakes up
	// for 256 KiB at a time.
	NullConsumer *nullRun    `json:"null_consumer,omitempty"`
	Bridge       []bridgeRun `json:"bridge_runs"`
	Bars         []barCheck  `json:"bars"`
}

// bridgeRun is one timed bridge run.
type bridgeRun struct {
	Target    string `json:"target"`
	Warehouse string `json:"warehouse"`
	Slot      string `json:"slot"`
	Rows      int64  `json:"rows"`
	// StreamSeconds runs from the bridge's "streaming" log line (after its
	// start-up: catalog, key index) to its exit after the last commit.
	StreamSeconds  float64 `json:"stream_seconds"`
	StartupSeconds float64 `json:"startup_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`
	RowsPerSec     float64 `json:"rows_per_sec"`
	// RowsPerSecWithStartup counts the start-up too.
	RowsPerSecWithStartup float64 `json:"rows_per_sec_with_startup"`
	RatioToLimit          float64 `json:"ratio_to_limit"`
	RatioToNullConsumer   float64 `json:"ratio_to_null_consumer,omitempty"`
	CPUUserSeconds        float64 `json:"cpu_user_seconds"`
	CPUSysSeconds         float64 `json:"cpu_sys_seconds"`
	StartupCPUSeconds     float64 `json:"startup_cpu_seconds"`
	// CPUSecondsPerMillion excludes the start-up; ...WithStartup is the
	// child's whole rusage.
	CPUSecondsPerMillion            float64      `json:"cpu_seconds_per_million_rows"`
	CPUSecondsPerMillionWithStartup float64      `json:"cpu_seconds_per_million_rows_with_startup"`
	PeakRSSMiB                      float64      `json:"peak_rss_mib"`
	PeakAnonRSSMiB                  float64      `json:"peak_anon_rss_mib"`
	WalsenderCPUSeconds             float64      `json:"walsender_cpu_seconds"`
	WalsenderCPUSecondsPerMillion   float64      `json:"walsender_cpu_seconds_per_million_rows"`
	BusyCores                       float64      `json:"machine_busy_cores"`
	OthersCPUSeconds                float64      `json:"others_cpu_seconds"`
	Flushes                         int          `json:"flushes"`
	FlushSeconds                    float64      `json:"flush_seconds"`
	ParquetFiles                    int          `json:"parquet_files"`
	ParquetBytes                    int64        `json:"parquet_bytes"`
	ParquetBytesPerRow              float64      `json:"parquet_bytes_per_row"`
	Snapshots                       int          `json:"snapshots"`
	DataFiles                       int          `json:"data_files"`
	DeleteFiles                     int          `json:"delete_files"`
	Tables                          []tableStats `json:"tables"`
	ConfirmedFlushLSN               string       `json:"confirmed_flush_lsn"`
	Profile                         string       `json:"profile,omitempty"`
}

func (e *env) runWorkload(ctx context.Context, w *workload) (*workloadResult, error) {
	pub := "pub_" + w.name
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	if err := e.prepare(ctx, conn, w, pub); err != nil {
		return nil, err
	}

	// Every consumer's slot exists before the workload: the bridges create
	// theirs at their first start (copying the prefill), the limit's and the
	// null consumer's are created here. Nothing of the publication is
	// written in between.
	var targets []bridgeTarget
	for _, name := range e.cfg.targets {
		targets = append(targets, e.target(name, w.name))
	}
	limitSlots := []string{"lim_" + w.name + "_a", "lim_" + w.name + "_b"}
	nullSlot := "null_" + w.name
	defer dropWorkload(conn, pub, w.table, append(append(slotNames(targets), limitSlots...), nullSlot))
	for _, t := range targets {
		if err := e.setupBridge(ctx, t, pub); err != nil {
			return nil, err
		}
	}
	for _, s := range append(limitSlots, nullSlot) {
		if _, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", s); err != nil {
			return nil, fmt.Errorf("create slot %s: %w", s, err)
		}
	}

	info, lastPre, end, err := e.writeWorkload(ctx, conn, w)
	if err != nil {
		return nil, err
	}
	rows := info.Rows

	res := &workloadResult{Date: e.date, Mode: e.mode(), Machine: e.machine, Build: e.build, Workload: info}
	limit := func(slot string) error {
		lr, err := e.runLimit(ctx, slot, pub, end, rows)
		if err != nil {
			return err
		}
		logf("limit %s: %.2fs, %.0f rows/s, walsender CPU %.2fs", slot, lr.Seconds, lr.RowsPerSec, lr.WalsenderCPUSeconds)
		res.Limit = append(res.Limit, lr)
		res.LimitRowsPerSec = max(res.LimitRowsPerSec, lr.RowsPerSec)
		return nil
	}
	if err := limit(limitSlots[0]); err != nil {
		return nil, err
	}
	nr, err := e.runNull(ctx, conn, nullSlot, pub, end, end+markerGuard, rows)
	if err != nil {
		return nil, err
	}
	logf("null consumer: %.2fs, %.0f rows/s, walsender CPU %.2fs, client CPU %.2fs, %d messages, %d allocations", nr.Seconds, nr.RowsPerSec, nr.WalsenderCPUSeconds, nr.ClientCPUSeconds, nr.Messages, nr.Mallocs)
	res.NullConsumer = &nr
	for _, t := range targets {
		br, err := e.timeBridge(ctx, conn, t, pub, w, rows, lastPre, end)
		if err != nil {
			return nil, err
		}
		res.Bridge = append(res.Bridge, br)
	}
	if err := limit(limitSlots[1]); err != nil {
		return nil, err
	}
	for i := range res.Bridge {
		res.Bridge[i].RatioToLimit = res.Bridge[i].RowsPerSec / res.LimitRowsPerSec
		res.Bridge[i].RatioToNullConsumer = res.Bridge[i].RowsPerSec / nr.RowsPerSec
	}
	res.Bars = workloadBars(res)
	return res, nil
}

// writeWorkload writes w's transactions, then the marker and a CHECKPOINT.
// It returns what was written, the WAL position just before the last
// COMMIT and the position after it (the workload's end).
func (e *env) writeWorkload(ctx context.Context, conn *pgx.Conn, w *workload) (workloadInfo, pglogrepl.LSN, pglogrepl.LSN, error) {
	startLSN, err := insertLSN(ctx, conn)
	if err != nil {
		return workloadInfo{}, 0, 0, err
	}
	logf("writing the workload")
	genStart := time.Now()
	rows, txns, lastPre, err := w.gen(ctx, conn)
	if err != nil {
		return workloadInfo{}, 0, 0, err
	}
	genSecs := time.Since(genStart).Seconds()
	end, err := insertLSN(ctx, conn)
	if err != nil {
		return workloadInfo{}, 0, 0, err
	}
	// The marker: one transaction holding a large logical message, after
	// the workload. The bridge's received position (WAL start + length of
	// the last message) passes end+markerGuard only with a message of the
	// marker transaction, since every workload message is shorter than
	// markerGuard; and it handles messages in order, so by then it has
	// applied the whole workload; the null consumer stops by the same rule.
	// pg_recvlogical stops at end.
	if _, err := conn.Exec(ctx, "SELECT pg_logical_emit_message(true, 'pg2iceberg-bench', repeat('m', $1))", markerBytes); err != nil {
		return workloadInfo{}, 0, 0, fmt.Errorf("emit marker message: %w", err)
	}
	// Write the dirty pages out now rather than during the timed runs.
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return workloadInfo{}, 0, 0, fmt.Errorf("checkpoint: %w", err)
	}
	info := workloadInfo{
		Name: w.name, Description: w.description, Table: w.table, Columns: w.columns, PrefilledRows: w.prefill,
		Rows: rows, Transactions: txns, GenerateSeconds: genSecs,
		StartLSN: startLSN.String(), EndLSN: end.String(), WALBytes: int64(end - startLSN),
	}
	info.WALBytesPerRow = float64(info.WALBytes) / float64(rows)
	logf("workload written: %d rows in %d transactions in %.1fs, %.1f MiB of WAL (%s..%s)", rows, txns, genSecs, float64(info.WALBytes)/(1<<20), startLSN, end)
	return info, lastPre, end, nil
}

func slotNames(ts []bridgeTarget) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.slot)
	}
	return out
}

func (e *env) mode() string {
	if e.cfg.quick {
		return "quick"
	}
	return "full"
}

// timeBridge runs the bridge on t from its slot until the whole workload is
// committed. lastPre is the WAL position just before the workload's last
// COMMIT; end is the position after it.
func (e *env) timeBridge(ctx context.Context, conn *pgx.Conn, t bridgeTarget, pub string, w *workload, rows int64, lastPre, end pglogrepl.LSN) (bridgeRun, error) {
	before, err := e.snapshotWarehouse(ctx, t, w)
	if err != nil {
		return bridgeRun{}, err
	}
	profile := e.profile(w.name + "-" + t.name)
	logf("bridge %s: catching up", t.name)
	cpu0 := machineCPU()
	ws := e.watchWalsender(ctx, "pg2iceberg")
	b, err := e.startBridge(t, pub, true, profile)
	if err != nil {
		return bridgeRun{}, err
	}
	defer b.stop(time.Minute)
	if err := b.waitStreaming(ctx, 30*time.Minute); err != nil {
		return bridgeRun{}, err
	}
	// Once the bridge has received a message of the marker transaction it
	// has applied the whole workload: stop it, so it commits what is
	// pending at once instead of at the next --flush-interval.
	client := &http.Client{Timeout: 2 * time.Second}
	threshold := float64(end + markerGuard)
	deadline := time.Now().Add(2 * time.Hour)
	for {
		v, err := b.metric(client, "pg2iceberg_received_lsn")
		if err == nil && v > threshold {
			break
		}
		select {
		case <-b.exited:
			return bridgeRun{}, fmt.Errorf("the bridge exited while catching up (%v)%s", b.waitErr, b.logTail())
		case <-ctx.Done():
			return bridgeRun{}, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return bridgeRun{}, fmt.Errorf("the bridge did not catch up within 2h%s", b.logTail())
		}
	}
	if err := e.stopAwake(ctx, b); err != nil {
		return bridgeRun{}, err
	}
	cpu1 := machineCPU()
	wcpu := ws.seconds()

	// All committed: the bridge acknowledged past the workload (it does so
	// only after committing to Iceberg).
	confirmed, err := waitConfirmed(ctx, conn, t.slot, end)
	if err != nil {
		return bridgeRun{}, fmt.Errorf("%w%s", err, b.logTail())
	}

	ru := b.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r := bridgeRun{
		Target: t.name, Warehouse: t.warehouse, Slot: t.slot, Rows: rows,
		WallSeconds:         b.exitedAt.Sub(b.started).Seconds(),
		StartupSeconds:      b.streamingAt.Sub(b.started).Seconds(),
		StreamSeconds:       b.exitedAt.Sub(b.streamingAt).Seconds(),
		CPUUserSeconds:      tvSeconds(ru.Utime),
		CPUSysSeconds:       tvSeconds(ru.Stime),
		StartupCPUSeconds:   b.streamCPU,
		PeakRSSMiB:          float64(ru.Maxrss) / 1024, // KiB on Linux
		WalsenderCPUSeconds: wcpu,
		BusyCores:           busyCores(cpu0, cpu1, b.exitedAt.Sub(b.started).Seconds()),
		ConfirmedFlushLSN:   confirmed.String(),
	}
	if profile != "" {
		r.Profile = profile + ".cpu.pprof"
	}
	b.mu.Lock()
	r.Flushes, r.FlushSeconds = b.flushes, b.flushElapsed.Seconds()
	r.PeakAnonRSSMiB = b.peakAnon
	b.mu.Unlock()
	r.RowsPerSec = float64(rows) / r.StreamSeconds
	r.RowsPerSecWithStartup = float64(rows) / r.WallSeconds
	cpu := r.CPUUserSeconds + r.CPUSysSeconds
	r.OthersCPUSeconds = max(0, cpu1.busy-cpu0.busy-cpu-wcpu)
	r.CPUSecondsPerMillion = (cpu - r.StartupCPUSeconds) / float64(rows) * 1e6
	r.WalsenderCPUSecondsPerMillion = wcpu / float64(rows) * 1e6
	r.CPUSecondsPerMillionWithStartup = cpu / float64(rows) * 1e6

	after, err := e.snapshotWarehouse(ctx, t, w)
	if err != nil {
		return bridgeRun{}, err
	}
	e.diffWarehouse(&r, before, after, lastPre)
	if err := e.checkMirror(ctx, conn, w, r.Tables); err != nil {
		return bridgeRun{}, fmt.Errorf("%s: %w", t.name, err)
	}
	logf("bridge %s: %.2fs streaming (+%.2fs start-up), %.0f rows/s, CPU %.2fs (%.2f s/M rows), peak RSS %.0f MiB, %d flushes (%.2fs), %.1f Parquet B/row",
		t.name, r.StreamSeconds, r.StartupSeconds, r.RowsPerSec, cpu, r.CPUSecondsPerMillion, r.PeakRSSMiB, r.Flushes, r.FlushSeconds, r.ParquetBytesPerRow)
	return r, nil
}

// stopAwake sends SIGINT and keeps the replication stream busy until the
// bridge exits. The bridge notices the stop only when a receive returns, and
// with nothing to receive it waits up to its 1s tick: non-transactional
// logical messages (sent by pgoutput at once, outside any transaction, and
// ignored by the bridge) wake it. The txid_current() makes each statement a
// committing transaction, so with synchronous_commit on the message is
// flushed and sent at once rather than by the WAL writer.
func (e *env) stopAwake(ctx context.Context, b *bridge) error {
	wake, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return err
	}
	defer wake.Close(context.Background())
	if _, err := wake.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return fmt.Errorf("set synchronous_commit: %w", err)
	}
	_ = b.cmd.Process.Signal(os.Interrupt)
	deadline := time.After(10 * time.Minute)
	for {
		select {
		case <-b.exited:
			if b.waitErr != nil {
				return fmt.Errorf("the bridge exited with %w%s", b.waitErr, b.logTail())
			}
			return nil
		case <-deadline:
			_ = b.cmd.Process.Kill()
			<-b.exited
			return fmt.Errorf("the bridge did not stop within 10m of SIGINT; killed%s", b.logTail())
		case <-time.After(20 * time.Millisecond):
			if _, err := wake.Exec(ctx, "SELECT pg_logical_emit_message(false, 'pg2iceberg-bench-wake', ''), txid_current()"); err != nil {
				return fmt.Errorf("emit wake-up message: %w", err)
			}
		}
	}
}

// checkMirror compares the mirror's live row count with the source table,
// so a figure is never reported for work that was not done.
func (e *env) checkMirror(ctx context.Context, conn *pgx.Conn, w *workload, tables []tableStats) error {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+w.table).Scan(&n); err != nil {
		return fmt.Errorf("count %s: %w", w.table, err)
	}
	for _, t := range tables {
		if strings.HasSuffix(t.Table, "__changelog") {
			continue
		}
		if t.LiveRows != n {
			return fmt.Errorf("mirror %s holds %d live rows, the source %d", t.Table, t.LiveRows, n)
		}
	}
	return nil
}

// dropWorkload drops a workload's slots, publication and table (errors
// ignored: it runs on the way out).
func dropWorkload(conn *pgx.Conn, pub, table string, slots []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range slots {
		_, _ = conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", s)
	}
	_, _ = conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pub)
	_, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
}
