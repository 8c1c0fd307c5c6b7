package bridge

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

// gather scrapes a registry of p, st and copies into its families by name.
func gather(t *testing.T, p *replication.Progress, st *iceberg.Stats, copies *copyProgress) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := newRegistry(p, st, copies).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// The collector reads the run's state at each scrape, the flush histograms
// count what the sink reports, and the Go and process collectors are there.
func TestCollectorValues(t *testing.T) {
	p, st, copies := &replication.Progress{}, &iceberg.Stats{}, newCopyProgress()
	st.Changes.Add(200)
	st.CompactionFailures.Add(2)
	p.SetPhase(replication.PhaseReconnecting, "lost")
	copies.set("shop.orders", 40, 100)
	reg := newRegistry(p, st, copies)
	st.OnFlush(200, 4096, 300*time.Millisecond, 2*time.Second)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		f := byName[name]
		if f == nil {
			t.Fatalf("no metric %s", name)
		}
	next:
		for _, m := range f.GetMetric() {
			for i, l := range m.GetLabel() {
				if i >= len(labels) || l.GetValue() != labels[i] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no sample of %s with labels %v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pg2iceberg_changes_total", nil, 200},
		{"pg2iceberg_errors_total", []string{"compaction"}, 2},
		{"pg2iceberg_errors_total", []string{"replication_connection"}, 1},
		{"pg2iceberg_backfill_rows", []string{"shop.orders"}, 40},
		{"pg2iceberg_backfill_rows_estimated", []string{"shop.orders"}, 100},
		{"pg2iceberg_flush_duration_seconds", nil, 1},
		{"pg2iceberg_commit_latency_seconds", nil, 1},
		{"pg2iceberg_freshness_seconds", nil, 0}, // nothing durable yet
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if byName[name] == nil {
			t.Errorf("no %s: the runtime and process collectors are missing", name)
		}
	}
}

// Every query of the Grafana dashboard in docs/ names a metric the bridge
// serves, so the dashboard does not chart nothing after a rename.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	data, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	served := map[string]bool{}
	for _, m := range metricDescs() {
		served[m.name] = true
	}
	for name := range gather(t, &replication.Progress{}, &iceberg.Stats{}, newCopyProgress()) {
		served[name] = true
	}
	name := regexp.MustCompile(`\b(pg2iceberg_[a-z_]+|process_[a-z_]+|go_[a-z_]+)`)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && served[b] {
						base = b
					}
				}
				if !served[base] {
					t.Errorf("panel %q queries %s, which the bridge does not serve", p.Title, n)
				}
			}
		}
	}
	if queries < 8 {
		t.Errorf("the dashboard has %d queries; it should chart lag, freshness, throughput, flushes, files, errors, copy progress and memory", queries)
	}
}
