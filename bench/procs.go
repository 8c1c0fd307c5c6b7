package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

const recvlogical = "/usr/bin/pg_recvlogical"

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTick = 100.0

// procCPU returns a process's user+system CPU seconds from /proc.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (ut + st) / clockTick, nil
}

// procHWM returns a process's peak resident set size so far (VmHWM), MiB.
func procHWM(pid int) (float64, error) { return procStatusMiB(pid, "VmHWM") }

// procStatusMiB returns a size field of /proc/<pid>/status, MiB.
func procStatusMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s of %d: %w", field, pid, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// anonSample is how often the bridge's anonymous memory is read.
const anonSample = 20 * time.Millisecond

// watchAnon samples the bridge's anonymous resident memory (RssAnon: heap,
// stacks, off-heap buffers) until it exits. Unlike the peak RSS it leaves
// out the binary's mapped pages, which differ by 5-10 MiB between two
// builds of one commit (how the kernel maps a new file's pages), so it
// compares builds.
func (b *bridge) watchAnon() {
	tick := time.NewTicker(anonSample)
	defer tick.Stop()
	for {
		if v, err := procStatusMiB(b.cmd.Process.Pid, "RssAnon"); err == nil {
			b.mu.Lock()
			b.peakAnon = max(b.peakAnon, v)
			b.mu.Unlock()
		}
		select {
		case <-b.exited:
			return
		case <-tick.C:
		}
	}
}

// cpuTimes is the machine's busy and total CPU time from /proc/stat.
type cpuTimes struct{ busy, total float64 }

func machineCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var t cpuTimes
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		}
	}
	t.busy /= clockTick
	t.total /= clockTick
	return t
}

// busyCores is how many cores were busy on average between a and b.
func busyCores(a, b cpuTimes, wall float64) float64 {
	if wall <= 0 {
		return 0
	}
	return (b.busy - a.busy) / wall
}

// walsenderSample is how often a walsender's CPU is read: its last
// interval before its client disconnects (and it exits) is lost, 1% of a
// 1 s run.
const walsenderSample = 10 * time.Millisecond

// walsenderCPU samples the CPU time of the walsender serving
// application_name until stop is called, and returns the last sample.
type walsenderCPU struct {
	mu   sync.Mutex
	pid  int
	last float64
	stop chan struct{}
	done chan struct{}
}

func (e *env) watchWalsender(ctx context.Context, app string) *walsenderCPU {
	w := &walsenderCPU{stop: make(chan struct{}), done: make(chan struct{})}
	since := time.Now() // a walsender of an earlier run may linger
	go e.sampleEvery(ctx, walsenderSample, w.stop, w.done, func(conn *pgx.Conn, _ int) {
		w.mu.Lock()
		pid := w.pid
		w.mu.Unlock()
		if pid == 0 {
			var p int
			if err := conn.QueryRow(ctx, "SELECT pid FROM pg_stat_replication WHERE application_name = $1 AND backend_start >= $2 ORDER BY backend_start DESC LIMIT 1", app, since).Scan(&p); err == nil {
				c, _ := procCPU(p)
				w.mu.Lock()
				w.pid, w.last = p, c
				w.mu.Unlock()
			}
		} else if c, err := procCPU(pid); err == nil {
			w.mu.Lock()
			w.last = c
			w.mu.Unlock()
		}
	})
	return w
}

// seconds stops sampling and returns the walsender's CPU seconds over the
// sampled period (its whole life when found at once).
func (w *walsenderCPU) seconds() float64 {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// backendsCPU samples the CPU time of every server process (backend or
// walsender) of application_name app that started after the watch began,
// until stop is called. A process that exits loses at most its last sample
// interval.
type backendsCPU struct {
	mu   sync.Mutex      // guards last
	last map[int]float64 // pid → its last CPU sample
	stop chan struct{}   // closed by seconds
	done chan struct{}   // closed by the sampling goroutine when it returns
}

func (e *env) watchBackends(ctx context.Context, app string) *backendsCPU {
	w := &backendsCPU{last: map[int]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	since := time.Now()
	go e.sampleEvery(ctx, 20*time.Millisecond, w.stop, w.done, func(conn *pgx.Conn, i int) {
		if i%5 == 0 { // look for new processes every 100ms
			rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND backend_start >= $2", app, since)
			if err == nil {
				pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
				w.mu.Lock()
				for _, p := range pids {
					if _, ok := w.last[int(p)]; !ok {
						w.last[int(p)] = 0
					}
				}
				w.mu.Unlock()
			}
		}
		w.mu.Lock()
		for pid := range w.last {
			if c, err := procCPU(pid); err == nil {
				w.last[pid] = c
			}
		}
		w.mu.Unlock()
	})
	return w
}

// seconds stops sampling and returns the processes' CPU seconds, summed.
func (w *backendsCPU) seconds() (cpu float64, procs int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for pid := range w.last {
		if c, err := procCPU(pid); err == nil {
			w.last[pid] = c
		}
	}
	for _, c := range w.last {
		cpu += c
	}
	return cpu, len(w.last)
}

// slotConfirmed returns a slot's confirmed_flush_lsn.
func slotConfirmed(ctx context.Context, conn *pgx.Conn, slot string) (pglogrepl.LSN, error) {
	var s *string
	if err := conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&s); err != nil {
		return 0, fmt.Errorf("read slot %s: %w", slot, err)
	}
	if s == nil {
		return 0, nil
	}
	return pglogrepl.ParseLSN(*s)
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// ------------------------------------------------------------------ bridge

// bridgeTarget is a warehouse the bridge writes to.
type bridgeTarget struct {
	name      string // local or s3
	slot      string
	warehouse string // directory or s3://bucket/prefix
	catalog   string // "" (embedded in the warehouse) or a SQLite path
	filesDir  string // where the Parquet files land on this machine
	bin       string // the bridge binary for this slot ("": env.bin)
}

func (e *env) target(name, id string) bridgeTarget {
	t := bridgeTarget{name: name, slot: "br_" + id + "_" + name}
	if name == "s3" {
		t.warehouse = "s3://" + s3Bucket + "/" + id
		t.catalog = e.tmp + "/" + id + "-s3-catalog.db"
		t.filesDir = e.s3.Dir + "/" + s3Bucket + "/" + id
	} else {
		t.warehouse = e.tmp + "/wh-" + id
		t.filesDir = t.warehouse
	}
	return t
}

// bridge is a running bin/pg2iceberg run.
type bridge struct {
	cmd         *exec.Cmd
	started     time.Time
	metricsAddr string
	logPath     string

	streaming   chan struct{} // closed at the "streaming" log line
	streamingAt time.Time     // set before streaming is closed
	streamCPU   float64       // the process's CPU seconds at that line
	streamHWM   float64       // and its peak RSS so far (VmHWM), MiB
	exited      chan struct{} // closed when the process has exited
	waitErr     error         // valid once exited is closed
	exitedAt    time.Time

	mu           sync.Mutex // guards the fields below, written by the log reader
	flushes      int
	flushElapsed time.Duration
	peakAnon     float64 // the highest RssAnon sampled (watchAnon), MiB
	tail         []string
	marks        map[string]logMark // first line of each log message
}

// logMark is the first line of one log message and when the bench read it.
type logMark struct {
	at   time.Time
	line string
}

var (
	flushElapsedRE = regexp.MustCompile(`msg="batch committed".* elapsed=(\S+)`)
	logMsgRE       = regexp.MustCompile(` msg=("(?:[^"\\]|\\.)*"|\S+)`)
)

// mark returns the first line of log message msg, if the bridge logged it.
func (b *bridge) mark(msg string) (logMark, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.marks[msg]
	return m, ok
}

// startBridge starts the bridge on t for publication pub. With metrics it
// serves /metrics on a free port; profile names a CPU profile to write
// (only with the profiling build).
func (e *env) startBridge(t bridgeTarget, pub string, metrics bool, profile string) (*bridge, error) {
	args := []string{"run", "--source", e.pg.URL(e.pg.SuperUser, "", benchDB), "--publication", pub,
		"--slot", t.slot, "--warehouse", t.warehouse, "--spool-dir", e.tmp}
	if t.catalog != "" {
		args = append(args, "--catalog", t.catalog)
	}
	if t.name == "s3" {
		args = append(args, "--s3-endpoint", e.s3.Endpoint, "--s3-region", e.s3.Region, "--s3-path-style")
	}
	args = append(args, e.cfg.bridgeArgs...)
	b := &bridge{streaming: make(chan struct{}), exited: make(chan struct{})}
	if metrics {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		b.metricsAddr = "127.0.0.1:" + strconv.Itoa(port)
		args = append(args, "--metrics-addr", b.metricsAddr)
	}
	bin := e.bin
	if t.bin != "" {
		bin = t.bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+e.pg.SuperPassword)
	if e.s3 != nil {
		cmd.Env = append(cmd.Env, e.s3.Env()...)
	}
	if profile != "" {
		cmd.Env = append(cmd.Env, profileEnvCPU+"="+profile+".cpu.pprof", profileEnvAllocs+"="+profile+".allocs.pprof", profileEnvHeap+"="+profile+".heap.pprof")
	}
	cmd.Env = append(cmd.Env, e.cfg.bridgeEnv...)
	// Own process group: a Ctrl-C reaches the bench, which stops the bridge.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	b.logPath = e.tmp + "/" + t.slot + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".log"
	logFile, err := os.Create(b.logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	b.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	b.cmd = cmd
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b.readLog(stderr, logFile)
	}()
	go b.watchAnon()
	go func() {
		<-readDone // Wait closes the pipe: read everything first
		b.waitErr = cmd.Wait()
		b.exitedAt = time.Now()
		logFile.Close()
		close(b.exited)
	}()
	return b, nil
}

func (b *bridge) readLog(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	streaming := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		now := time.Now()
		if !streaming && strings.Contains(line, " msg=streaming ") {
			b.streamingAt = now
			b.streamCPU, _ = procCPU(b.cmd.Process.Pid)
			b.streamHWM, _ = procHWM(b.cmd.Process.Pid)
			streaming = true
			close(b.streaming)
		}
		b.mu.Lock()
		if m := logMsgRE.FindStringSubmatch(line); m != nil {
			msg := m[1]
			if u, err := strconv.Unquote(msg); err == nil {
				msg = u
			}
			if _, ok := b.marks[msg]; !ok {
				if b.marks == nil {
					b.marks = map[string]logMark{}
				}
				b.marks[msg] = logMark{at: now, line: line}
			}
		}
		if m := flushElapsedRE.FindStringSubmatch(line); m != nil {
			b.flushes++
			if d, err := time.ParseDuration(m[1]); err == nil {
				b.flushElapsed += d
			}
		}
		b.tail = append(b.tail, line)
		if len(b.tail) > 30 {
			b.tail = b.tail[1:]
		}
		b.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

func (b *bridge) logTail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return "\n--- bridge log (" + b.logPath + ") ---\n" + strings.Join(b.tail, "\n")
}

// stop sends SIGINT and waits for the exit; after timeout it kills.
func (b *bridge) stop(timeout time.Duration) error {
	select {
	case <-b.exited:
	default:
		_ = b.cmd.Process.Signal(os.Interrupt)
		select {
		case <-b.exited:
		case <-time.After(timeout):
			_ = b.cmd.Process.Kill()
			<-b.exited
			return fmt.Errorf("the bridge did not stop within %s of SIGINT; killed%s", timeout, b.logTail())
		}
	}
	if b.waitErr != nil {
		return fmt.Errorf("the bridge exited with %w%s", b.waitErr, b.logTail())
	}
	return nil
}

// waitStreaming waits for the "streaming" log line.
func (b *bridge) waitStreaming(ctx context.Context, timeout time.Duration) error {
	select {
	case <-b.streaming:
		return nil
	case <-b.exited:
		return fmt.Errorf("the bridge exited before streaming (%v)%s", b.waitErr, b.logTail())
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("the bridge did not start streaming within %s%s", timeout, b.logTail())
	}
}

// metric reads one unlabelled gauge from /metrics.
func (b *bridge) metric(client *http.Client, name string) (float64, error) {
	resp, err := client.Get("http://" + b.metricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not served", name)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// setupBridge runs the bridge once on the prepared table: it creates its
// slot, copies the prefill, starts streaming and is stopped again, so the
// timed run later starts from the slot with an up-to-date mirror.
func (e *env) setupBridge(ctx context.Context, t bridgeTarget, pub string) error {
	b, err := e.startBridge(t, pub, false, "")
	if err != nil {
		return err
	}
	if err := b.waitStreaming(ctx, 30*time.Minute); err != nil {
		_ = b.stop(time.Minute)
		return fmt.Errorf("first start on %s: %w", t.name, err)
	}
	if err := b.stop(5 * time.Minute); err != nil {
		return fmt.Errorf("first start on %s: %w", t.name, err)
	}
	logf("bridge %s: slot %s created, initial copy done in %s", t.name, t.slot, b.exitedAt.Sub(b.started).Round(time.Millisecond))
	return nil
}

// sampleEvery calls sample (with its own connection and a counter) every
// interval until stop is closed or ctx ends, then closes done.
func (e *env) sampleEvery(ctx context.Context, every time.Duration, stop <-chan struct{}, done chan<- struct{}, sample func(conn *pgx.Conn, i int)) {
	defer close(done)
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		sample(conn, i)
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
