package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Toxiproxy is a running toxiproxy server (github.com/Shopify/toxiproxy),
// a TCP proxy that injects network faults ("toxics") between a client and
// a server. It is driven through its HTTP API on 127.0.0.1.
type Toxiproxy struct {
	API     string // http://127.0.0.1:port
	LogFile string

	cmd      *exec.Cmd
	done     chan struct{}
	client   *http.Client
	stopOnce sync.Once
}

// Proxy is one proxy of a Toxiproxy: Listen (127.0.0.1:port) forwards to
// its upstream.
type Proxy struct {
	Name   string
	Listen string
	tp     *Toxiproxy
}

// Toxic is a fault added to a proxy. Type is latency, bandwidth,
// reset_peer, timeout, slow_close, slicer or limit_data; Stream is
// "downstream" (server to client, the default) or "upstream"; Attributes
// are the type's (latency and jitter in ms, rate in KB/s, timeout in ms,
// delay in ms).
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream,omitempty"`
	Toxicity   float64        `json:"toxicity"`
	Attributes map[string]int `json:"attributes"`
}

// StartToxiproxy starts toxiproxy-server on a free 127.0.0.1 port and
// waits until its API answers.
func StartToxiproxy(ctx context.Context, dir string) (*Toxiproxy, error) {
	bin, err := findToxiproxy()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	t := &Toxiproxy{
		API: "http://127.0.0.1:" + strconv.Itoa(port), LogFile: filepath.Join(dir, "toxiproxy.log"),
		done: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second},
	}
	logFile, err := os.Create(t.LogFile)
	if err != nil {
		return nil, fmt.Errorf("create toxiproxy log: %w", err)
	}
	t.cmd = exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	t.cmd.Stdout, t.cmd.Stderr = logFile, logFile
	if err := t.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = t.cmd.Wait(); logFile.Close(); close(t.done) }()
	if err := t.waitReady(ctx); err != nil {
		t.Stop()
		return nil, err
	}
	return t, nil
}

// StartToxiproxyT starts a toxiproxy for a test and stops it at cleanup.
func StartToxiproxyT(t testing.TB) *Toxiproxy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tp, err := StartToxiproxy(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start toxiproxy: %v", err)
	}
	t.Cleanup(tp.Stop)
	return tp
}

func (t *Toxiproxy) waitReady(ctx context.Context) error {
	for {
		resp, err := t.client.Get(t.API + "/version")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-t.done:
			return fmt.Errorf("toxiproxy exited early (rebuild it with scripts/setup.sh if it is broken)%s", logTail(t.LogFile))
		case <-ctx.Done():
			return fmt.Errorf("toxiproxy at %s did not answer: %w%s", t.API, err, logTail(t.LogFile))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop kills the server (its proxies close their connections).
func (t *Toxiproxy) Stop() {
	t.stopOnce.Do(func() {
		_ = t.cmd.Process.Kill()
		<-t.done
	})
}

// call sends a JSON request to the API and requires a 2xx answer.
func (t *Toxiproxy) call(method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("toxiproxy %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, t.API+path, rd)
	if err != nil {
		return fmt.Errorf("toxiproxy %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return fmt.Errorf("toxiproxy %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("toxiproxy %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Proxy creates a proxy named name on a free 127.0.0.1 port in front of
// upstream (host:port).
func (t *Toxiproxy) Proxy(name, upstream string) (*Proxy, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	body := map[string]any{"name": name, "listen": listen, "upstream": upstream, "enabled": true}
	if err := t.call(http.MethodPost, "/proxies", body); err != nil {
		return nil, err
	}
	return &Proxy{Name: name, Listen: listen, tp: t}, nil
}

// Add adds a toxic to the proxy, on existing and new connections.
func (p *Proxy) Add(tx Toxic) error {
	if tx.Toxicity == 0 {
		tx.Toxicity = 1
	}
	return p.tp.call(http.MethodPost, "/proxies/"+p.Name+"/toxics", tx)
}

// Remove removes the toxic named name.
func (p *Proxy) Remove(name string) error {
	return p.tp.call(http.MethodDelete, "/proxies/"+p.Name+"/toxics/"+name, nil)
}

// SetEnabled enables or disables the proxy: disabled, it closes every
// connection and refuses new ones.
func (p *Proxy) SetEnabled(on bool) error {
	return p.tp.call(http.MethodPost, "/proxies/"+p.Name, map[string]any{"enabled": on})
}

// findToxiproxy looks in $PG2ICEBERG_TOXIPROXY, PATH and the Go bin
// directories for toxiproxy-server (scripts/setup.sh installs it).
func findToxiproxy() (string, error) {
	const name = "toxiproxy-server"
	if p := os.Getenv("PG2ICEBERG_TOXIPROXY"); p != "" {
		if isExec(p) {
			return p, nil
		}
		return "", fmt.Errorf("PG2ICEBERG_TOXIPROXY=%s is not an executable file: fix the variable or unset it", p)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs := goBinDirs()
	for _, d := range dirs {
		if p := filepath.Join(d, name); isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or %s: run scripts/setup.sh (it installs github.com/Shopify/toxiproxy/v2/cmd/server@%s as %s)",
		name, strings.Join(dirs, ", "), ToxiproxyVersion, name)
}

// ToxiproxyVersion is the version scripts/setup.sh installs.
const ToxiproxyVersion = "v2.5.0"
