package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The profiling build writes profiles named by these variables.
const (
	profileEnvCPU    = "PG2ICEBERG_BENCH_CPUPROFILE"
	profileEnvAllocs = "PG2ICEBERG_BENCH_ALLOCSPROFILE"
	profileEnvHeap   = "PG2ICEBERG_BENCH_HEAPPROFILE"
)

// profilingMain wraps the bridge's main, renamed pg2icebergMain in the
// overlay copy of main.go. It writes a CPU profile of the whole run, the
// allocations at exit, and a heap profile taken when the heap in use was at
// its highest (checked every 100ms). A run that exits through os.Exit (an
// error) writes no CPU or allocation profile.
const profilingMain = `package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

func init() {
	p := os.Getenv("` + profileEnvHeap + `")
	if p == "" {
		return
	}
	go func() {
		var peak uint64
		var ms runtime.MemStats
		for range time.Tick(100 * time.Millisecond) {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse < peak+peak/20 {
				continue
			}
			peak = ms.HeapInuse
			if f, err := os.Create(p); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}()
}

func main() {
	var cpu *os.File
	if p := os.Getenv("` + profileEnvCPU + `"); p != "" {
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				cpu = f
			} else {
				f.Close()
			}
		}
	}
	pg2icebergMain()
	if p := os.Getenv("` + profileEnvAllocs + `"); p != "" {
		if f, err := os.Create(p); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if cpu != nil {
		pprof.StopCPUProfile()
		cpu.Close()
	}
}
`

// buildProfilingBridge builds a copy of the bridge that profiles itself,
// without touching the source tree: go build -overlay replaces main.go by a
// copy whose main is renamed and adds a file with a main that profiles it.
func buildProfilingBridge(ctx context.Context, tmp string) (string, error) {
	mainPath, err := filepath.Abs("main.go")
	if err != nil {
		return "", err
	}
	src, err := os.ReadFile(mainPath)
	if err != nil {
		return "", fmt.Errorf("read the bridge's main.go (run from the repository root): %w", err)
	}
	const decl = "\nfunc main() {\n"
	if strings.Count(string(src), decl) != 1 {
		return "", fmt.Errorf("%s has no single %q: the profiling build needs updating", mainPath, strings.TrimSpace(decl))
	}
	dir := filepath.Join(tmp, "overlay")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	renamed := strings.Replace(string(src), decl, "\nfunc pg2icebergMain() {\n", 1)
	files := map[string]string{
		mainPath: renamed,
		filepath.Join(filepath.Dir(mainPath), "zz_bench_pprof.go"): profilingMain,
	}
	overlay := struct{ Replace map[string]string }{Replace: map[string]string{}}
	i := 0
	for target, content := range files {
		p := filepath.Join(dir, fmt.Sprintf("f%d.go", i))
		i++
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
		overlay.Replace[target] = p
	}
	js, err := json.Marshal(overlay)
	if err != nil {
		return "", err
	}
	ovPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovPath, js, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "pg2iceberg-pprof")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", ovPath, "-o", out, ".")
	cmd.Dir = filepath.Dir(mainPath)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the profiling bridge: %w\n%s", err, b)
	}
	return out, nil
}

// profile is the profile path prefix of one measured bridge run, or ""
// without -pprof.
func (e *env) profile(run string) string {
	if e.cfg.pprofDir == "" {
		return ""
	}
	return e.cfg.pprofDir + "/" + e.date + "-" + run
}
