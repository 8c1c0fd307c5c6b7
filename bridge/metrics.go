package bridge

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

// serveMetrics serves /metrics (Prometheus text format, by client_golang:
// see newRegistry), /status (JSON) and /healthz (see healthz) at addr, in a
// goroutine of the run's errgroup, until stop is called. It reads only
// what is safe to read concurrently, created with the bridge: the
// progress, the copies and the sink's Stats.
func (b *bridge) serveMetrics(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	p, st, copies := b.progress, b.stats, b.copies
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz(p))
	mux.Handle("/metrics", promhttp.HandlerFor(newRegistry(p, st, copies), promhttp.HandlerOpts{ErrorLog: promLog{b.log}}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		type table struct {
			Table          string `json:"table"`
			Watermark      string `json:"watermark_lsn"`
			LastCommit     string `json:"last_commit,omitempty"`
			DataFiles      int64  `json:"live_data_files"`
			DeleteFiles    int64  `json:"live_delete_files"`
			LiveBytes      int64  `json:"live_bytes"`
			OutsideCommits int64  `json:"outside_commits,omitempty"`
			// The bridge's last compaction of the table since it started.
			LastCompaction string `json:"last_compaction,omitempty"`
			// Bytes of live data files per tier (tables with tiering on).
			HotBytes  *int64 `json:"hot_bytes,omitempty"`
			ColdBytes *int64 `json:"cold_bytes,omitempty"`
		}
		out := struct {
			Received string                      `json:"received_lsn"`
			Acked    string                      `json:"acknowledged_lsn"`
			WALEnd   string                      `json:"server_wal_end_lsn"`
			LagBytes int64                       `json:"lag_bytes"`
			Changes  int64                       `json:"changes_total"`
			Tables   []table                     `json:"tables"`
			Backfill map[string]map[string]int64 `json:"backfill,omitempty"`
			// Tables whose changes are skipped until a human fixes them.
			NeedsHuman []replication.Attention `json:"needs_human,omitempty"`
		}{p.Received().String(), p.Acked().String(), p.ServerWALEnd().String(), p.LagBytes(), st.Changes.Load(), nil, nil, p.Attention()}
		for table, v := range copies.snapshot() {
			if out.Backfill == nil {
				out.Backfill = map[string]map[string]int64{}
			}
			out.Backfill[table] = map[string]int64{"rows": v[0], "estimated_rows": v[1]}
		}
		for _, t := range st.Tables() {
			tb := table{Table: t.Table, Watermark: t.Watermark.String(), DataFiles: t.Live.Data, DeleteFiles: t.Live.Deletes, LiveBytes: t.Live.Bytes, OutsideCommits: t.OutsideCommits}
			if !t.Committed.IsZero() {
				tb.LastCommit = t.Committed.UTC().Format(time.RFC3339)
			}
			if !t.LastCompaction.IsZero() {
				tb.LastCompaction = t.LastCompaction.UTC().Format(time.RFC3339)
			}
			if t.Tiered {
				tb.HotBytes, tb.ColdBytes = &t.HotBytes, &t.ColdBytes
			}
			out.Tables = append(out.Tables, tb)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := serveHTTP(b.g, srv, ln, "metrics server stopped", b.log)
	b.log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}

// promLog logs the errors of the metrics handler.
type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) { l.log.Warn("metrics scrape failed", "error", fmt.Sprint(v...)) }
