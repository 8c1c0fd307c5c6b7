package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// limitRun is one pass of a reference consumer (pg_recvlogical or the null
// consumer) over the workload.
type limitRun struct {
	Slot                string  `json:"slot"`
	Seconds             float64 `json:"seconds"`
	RowsPerSec          float64 `json:"rows_per_sec"`
	ClientCPUSeconds    float64 `json:"client_cpu_seconds"`
	WalsenderCPUSeconds float64 `json:"walsender_cpu_seconds"`
	// WalsenderCPUSecondsPerMillion is what the server needed to serve
	// this consumer, per million rows.
	WalsenderCPUSecondsPerMillion float64 `json:"walsender_cpu_seconds_per_million_rows"`
	BusyCores                     float64 `json:"machine_busy_cores"`
	// OthersCPUSeconds is the machine's busy time minus the consumer's and
	// its walsender's: other processes competing for the CPUs.
	OthersCPUSeconds float64 `json:"others_cpu_seconds"`
	Command          string  `json:"command"`
}

// nullRun is one pass of bench/nullconsumer: a limitRun and what the
// consumer counted.
type nullRun struct {
	limitRun
	Messages int64 `json:"messages"`
	Changes  int64 `json:"changes"`
	Bytes    int64 `json:"bytes"`
	// Mallocs is the consumer's heap allocations while receiving (a few,
	// not one per message).
	Mallocs           uint64 `json:"mallocs"`
	ConfirmedFlushLSN string `json:"confirmed_flush_lsn"`
}

// runLimit times pg_recvlogical from slot to end (the WAL position after the
// workload) writing to /dev/null.
func (e *env) runLimit(ctx context.Context, slot, pub string, end pglogrepl.LSN, rows int64) (limitRun, error) {
	args := []string{"-h", e.pg.Host, "-p", strconv.Itoa(e.pg.Port), "-U", e.pg.SuperUser, "-d", benchDB,
		"--slot", slot, "--start", "-f", "/dev/null",
		"-o", "proto_version=2", "-o", "publication_names=" + pub, "-o", "streaming=on",
		"-E", end.String(), "--no-loop"}
	cmd := exec.CommandContext(ctx, recvlogical, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+e.pg.SuperPassword, "PGAPPNAME=pg_recvlogical")
	return e.timeClient(ctx, cmd, "pg_recvlogical", slot, rows)
}

// nullApp is the null consumer's application_name.
const nullApp = "nullconsumer"

// runNull times the null consumer from slot until it received a message
// ending past stop (the bridge's stop rule: see runWorkload), then checks
// that it counted every change and that the slot confirmed the workload.
func (e *env) runNull(ctx context.Context, conn *pgx.Conn, slot, pub string, end, stop pglogrepl.LSN, rows int64) (nullRun, error) {
	args := []string{"-url", e.pg.URL(e.pg.SuperUser, "", benchDB), "-slot", slot, "-publication", pub,
		"-stop", stop.String(), "-app", nullApp}
	args = append(args, e.cfg.nullArgs...)
	cmd := exec.CommandContext(ctx, e.nullBin, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+e.pg.SuperPassword)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	lr, err := e.timeClient(ctx, cmd, nullApp, slot, rows)
	if err != nil {
		return nullRun{}, err
	}
	r := nullRun{limitRun: lr}
	var counts struct {
		Messages, Changes, Bytes int64
		Mallocs                  uint64
	}
	if err := json.Unmarshal([]byte(stdout.String()), &counts); err != nil {
		return nullRun{}, fmt.Errorf("null consumer output %q: %w", stdout.String(), err)
	}
	r.Messages, r.Changes, r.Bytes, r.Mallocs = counts.Messages, counts.Changes, counts.Bytes, counts.Mallocs
	if r.Changes != rows {
		return nullRun{}, fmt.Errorf("the null consumer received %d changes, the workload wrote %d", r.Changes, rows)
	}
	confirmed, err := waitConfirmed(ctx, conn, slot, end)
	if err != nil {
		return nullRun{}, fmt.Errorf("null consumer: %w", err)
	}
	r.ConfirmedFlushLSN = confirmed.String()
	return r, nil
}

// timeClient runs cmd, a replication client on slot whose connection has
// application_name app, and times it with its walsender's CPU.
func (e *env) timeClient(ctx context.Context, cmd *exec.Cmd, app, slot string, rows int64) (limitRun, error) {
	ws := e.watchWalsender(ctx, app)
	m, err := runMeasured(cmd, ws.seconds)
	if err != nil {
		return limitRun{}, err
	}
	return limitRun{
		Slot: slot, Seconds: m.wall, RowsPerSec: float64(rows) / m.wall,
		ClientCPUSeconds:              m.client,
		WalsenderCPUSeconds:           m.server,
		WalsenderCPUSecondsPerMillion: m.server / float64(rows) * 1e6,
		BusyCores:                     m.busyCores,
		OthersCPUSeconds:              m.others,
		Command:                       strings.Join(cmd.Args, " "),
	}, nil
}

// measuredRun is a client process's run: wall time, its own CPU, the server
// CPU spent on it, and the machine's.
type measuredRun struct {
	wall, client, server float64
	busyCores            float64
	others               float64 // the machine's busy time minus client and server
}

// runMeasured runs cmd; serverCPU stops the caller's watch of the server
// processes serving it and returns their CPU seconds.
func runMeasured(cmd *exec.Cmd, serverCPU func() float64) (measuredRun, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cpu0 := machineCPU()
	start := time.Now()
	err := cmd.Run()
	m := measuredRun{wall: time.Since(start).Seconds()}
	cpu1 := machineCPU()
	m.server = serverCPU()
	if err != nil {
		return measuredRun{}, fmt.Errorf("%s: %w: %s", cmd.Path, err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m.client = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	m.busyCores = busyCores(cpu0, cpu1, m.wall)
	m.others = max(0, cpu1.busy-cpu0.busy-m.client-m.server)
	return m, nil
}

// waitConfirmed waits up to 5s for the slot's confirmed_flush_lsn to reach
// end: a consumer's last status may be recorded just after it exits.
func waitConfirmed(ctx context.Context, conn *pgx.Conn, slot string, end pglogrepl.LSN) (pglogrepl.LSN, error) {
	var confirmed pglogrepl.LSN
	var err error
	for i := 0; i < 100; i++ {
		if confirmed, err = slotConfirmed(ctx, conn, slot); err != nil {
			return 0, err
		}
		if confirmed >= end {
			return confirmed, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return confirmed, fmt.Errorf("slot %s confirmed %s after its consumer stopped, short of the workload's end %s", slot, confirmed, end)
}

// buildNullConsumer builds bench/nullconsumer into tmp (run from the
// repository root, as for the bridge binary).
func buildNullConsumer(ctx context.Context, tmp string) (string, error) {
	out := filepath.Join(tmp, "nullconsumer")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./bench/nullconsumer")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the null consumer (run from the repository root): %w\n%s", err, b)
	}
	return out, nil
}
