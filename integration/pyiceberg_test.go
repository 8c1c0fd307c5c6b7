package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// pyiceberg reads go through readers/pyiceberg_serve.py processes, each
// answering many reads: a python3 that imports pyiceberg and pyarrow costs
// about 2 s of CPU, and the suite reads a few hundred times. At most
// pyicebergProcs run at once (tests in parallel read at once); TestMain
// stops them.
const pyicebergProcs = 2

type pyicebergProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
}

var pyiceberg = struct {
	slots chan struct{} // a token per process that may run
	mu    sync.Mutex    // guards idle and all
	idle  []*pyicebergProc
	all   []*pyicebergProc
}{slots: make(chan struct{}, pyicebergProcs)}

func startPyiceberg() (*pyicebergProc, error) {
	p := &pyicebergProc{stderr: &lockedBuffer{}}
	cmd, stdin, stdout, err := startReader("readers/pyiceberg_serve.py", "", p.stderr)
	if err != nil {
		return nil, err
	}
	p.cmd, p.stdin = cmd, stdin
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	pyiceberg.mu.Lock()
	pyiceberg.all = append(pyiceberg.all, p)
	pyiceberg.mu.Unlock()
	return p, nil
}

// pyicebergDump runs pyiceberg_dump.py with args, and env (S3
// credentials) for this read only; it returns what the script prints and,
// when it fails, an error holding its stderr.
func pyicebergDump(env []string, args ...string) ([]byte, error) {
	pyiceberg.slots <- struct{}{}
	defer func() { <-pyiceberg.slots }()
	pyiceberg.mu.Lock()
	var p *pyicebergProc
	if n := len(pyiceberg.idle); n > 0 {
		p, pyiceberg.idle = pyiceberg.idle[n-1], pyiceberg.idle[:n-1]
	}
	pyiceberg.mu.Unlock()
	if p == nil {
		var err error
		if p, err = startPyiceberg(); err != nil {
			return nil, err
		}
	}
	out, err := p.dump(env, args)
	if err != nil && !errors.As(err, new(*dumpError)) {
		// The process is gone or out of step: do not use it again.
		_ = p.cmd.Process.Kill()
		return nil, fmt.Errorf("%w; pyiceberg_serve.py stderr:\n%s", err, tail(p.stderr.log(), 20))
	}
	pyiceberg.mu.Lock()
	pyiceberg.idle = append(pyiceberg.idle, p)
	pyiceberg.mu.Unlock()
	return out, err
}

// dumpError is pyiceberg_dump.py's own failure: the process stays usable.
type dumpError struct {
	status int
	stderr string
}

func (e *dumpError) Error() string {
	return fmt.Sprintf("pyiceberg_dump.py exited with %d\n%s", e.status, e.stderr)
}

func (p *pyicebergProc) dump(env []string, args []string) ([]byte, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	req, err := json.Marshal(map[string]any{"argv": args, "env": vars})
	if err != nil {
		return nil, err
	}
	// A read that hangs ends the process, so the read below returns.
	hung := time.AfterFunc(5*time.Minute, func() { _ = p.cmd.Process.Kill() })
	defer hung.Stop()
	if _, err := p.stdin.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("pyiceberg_serve.py request: %w", err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("pyiceberg_serve.py answer: %w", err)
	}
	head, ok := strings.CutPrefix(line, "@@ ")
	if !ok {
		return nil, fmt.Errorf("pyiceberg_serve.py answered %.200q, want a line starting with @@", line)
	}
	var h struct {
		Status int    `json:"status"`
		Stderr string `json:"stderr"`
		Bytes  int    `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(head), &h); err != nil {
		return nil, fmt.Errorf("pyiceberg_serve.py answer %.200q: %w", head, err)
	}
	out := make([]byte, h.Bytes)
	if _, err := io.ReadFull(p.out, out); err != nil {
		return nil, fmt.Errorf("pyiceberg_serve.py output: %w", err)
	}
	if h.Status != 0 {
		return out, &dumpError{h.Status, h.Stderr}
	}
	return out, nil
}

// startReader starts python3 with a script from readers/ in dir (""
// for this one), its stderr to stderr, and pipes to its stdin and stdout.
func startReader(script, dir string, stderr io.Writer, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	path, err := filepath.Abs(script)
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command("python3", append([]string{path}, args...)...)
	cmd.Dir, cmd.Stderr = dir, stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("start %s: %w", script, err)
	}
	return cmd, stdin, stdout, nil
}

// stopPyiceberg ends the processes (TestMain).
func stopPyiceberg() {
	pyiceberg.mu.Lock()
	defer pyiceberg.mu.Unlock()
	for _, p := range pyiceberg.all {
		stopReader(p.cmd, p.stdin, 10*time.Second)
	}
}

// stopReader closes a reader's stdin, which ends it, and kills it if it
// has not ended within the given time.
func stopReader(cmd *exec.Cmd, stdin io.Closer, within time.Duration) {
	_ = stdin.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
	}
}
