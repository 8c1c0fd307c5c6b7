package bridge

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// serveMetrics serves /metrics (Prometheus text format), /status (JSON) and
// /healthz (see healthz) at addr, in a goroutine of the run's errgroup,
// until stop is called.
func (b *bridge) serveMetrics(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	p, st, copies := b.progress, b.stats, b.copies
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz(p))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		gauge := func(name, help string, v any) {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
		}
		gauge("pg2iceberg_received_lsn", "End LSN of the last WAL message received.", uint64(p.Received()))
		gauge("pg2iceberg_acknowledged_lsn", "Flush LSN last acknowledged to PostgreSQL (committed to Iceberg).", uint64(p.Acked()))
		gauge("pg2iceberg_server_wal_end_lsn", "Server WAL end reported by the walsender.", uint64(p.ServerWALEnd()))
		gauge("pg2iceberg_lag_bytes", "WAL between the server's end and the acknowledged LSN.", p.LagBytes())
		fmt.Fprintf(w, "# HELP pg2iceberg_changes_total Row changes committed to Iceberg.\n# TYPE pg2iceberg_changes_total counter\npg2iceberg_changes_total %d\n", st.Changes.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_flushes_total Flushes committed.\n# TYPE pg2iceberg_flushes_total counter\npg2iceberg_flushes_total %d\n", st.Flushes.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_ddl_events_ignored_total DDL events ignored: not signed by the DDL capture's trigger for their transaction, or malformed.\n# TYPE pg2iceberg_ddl_events_ignored_total counter\npg2iceberg_ddl_events_ignored_total %d\n", p.DDLIgnored())
		fmt.Fprintf(w, "# HELP pg2iceberg_changes_skipped_total Row changes and truncates skipped because their table is gone, no longer published, or cannot be mirrored as it is (see pg2iceberg_tables_need_human).\n# TYPE pg2iceberg_changes_skipped_total counter\npg2iceberg_changes_skipped_total %d\n", p.ChangesSkipped())
		attn := p.Attention()
		gauge("pg2iceberg_tables_need_human", "Tables whose changes are skipped until a human fixes them (a missing GRANT, a type without an Iceberg form, a bad key); /status says what to run.", len(attn))
		fmt.Fprintf(w, "# HELP pg2iceberg_table_needs_human 1 for each table whose changes are skipped until a human fixes it; /status says what to run.\n# TYPE pg2iceberg_table_needs_human gauge\n")
		for _, a := range attn {
			fmt.Fprintf(w, "pg2iceberg_table_needs_human{table=\"%s\"} 1\n", labelEscaper.Replace(a.Table))
		}
		fmt.Fprintf(w, "# HELP pg2iceberg_expire_failures_total Snapshot expiries (or deletes of expired files) that failed; each is tried again at the next expiry.\n# TYPE pg2iceberg_expire_failures_total counter\npg2iceberg_expire_failures_total %d\n", st.ExpireFailures.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_snapshots_expired_total Snapshots removed by expiry after commits.\n# TYPE pg2iceberg_snapshots_expired_total counter\npg2iceberg_snapshots_expired_total %d\n", st.SnapshotsExpired.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_manifest_rewrites_total Manifest rewrites committed after commits (a table past %d data manifests).\n# TYPE pg2iceberg_manifest_rewrites_total counter\npg2iceberg_manifest_rewrites_total %d\n", tiering.MaxManifests, st.ManifestRewrites.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_orphans_removed_total Orphan files removed (unreferenced, older than 3 days; a daily cleanup per table).\n# TYPE pg2iceberg_orphans_removed_total counter\npg2iceberg_orphans_removed_total %d\n", st.OrphansRemoved.Load())
		fmt.Fprintf(w, "# HELP pg2iceberg_orphan_bytes_removed_total Bytes of the orphan files removed.\n# TYPE pg2iceberg_orphan_bytes_removed_total counter\npg2iceberg_orphan_bytes_removed_total %d\n", st.OrphanBytes.Load())
		removed, kept := st.AbandonedFiles()
		fmt.Fprintf(w, "# HELP pg2iceberg_abandoned_files_total Files written and abandoned before any commit named them (aborted writers, discarded speculation), by whether they were deleted.\n# TYPE pg2iceberg_abandoned_files_total counter\npg2iceberg_abandoned_files_total{result=\"removed\"} %d\npg2iceberg_abandoned_files_total{result=\"kept\"} %d\n", removed, kept)
		fmt.Fprintf(w, "# HELP pg2iceberg_table_watermark_lsn LSN watermark of each Iceberg table.\n# TYPE pg2iceberg_table_watermark_lsn gauge\n")
		for _, t := range st.Tables() {
			fmt.Fprintf(w, "pg2iceberg_table_watermark_lsn{table=%q} %d\n", t.Table, uint64(t.Watermark))
		}
		tableMetrics(w, st.Tables())
		compactionMetrics(w, st)
		fmt.Fprintf(w, "# HELP pg2iceberg_backfill_rows Rows copied by each table's backfill, and its estimated total.\n# TYPE pg2iceberg_backfill_rows gauge\n")
		for table, v := range copies.snapshot() {
			fmt.Fprintf(w, "pg2iceberg_backfill_rows{table=%q} %d\npg2iceberg_backfill_rows_estimated{table=%q} %d\n", table, v[0], table, v[1])
		}
	})
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

// labelEscaper escapes a Prometheus label value (a table name may hold a
// quote or a backslash).
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// tableMetrics writes the per-table file gauges and outside-commit
// counters of /metrics.
func tableMetrics(w io.Writer, tables []iceberg.TableStatus) {
	fmt.Fprintf(w, "# HELP pg2iceberg_table_live_files Files of each Iceberg table's current snapshot, by content.\n# TYPE pg2iceberg_table_live_files gauge\n")
	for _, t := range tables {
		name := labelEscaper.Replace(t.Table)
		fmt.Fprintf(w, "pg2iceberg_table_live_files{table=\"%s\",content=\"data\"} %d\npg2iceberg_table_live_files{table=\"%s\",content=\"deletes\"} %d\n", name, t.Live.Data, name, t.Live.Deletes)
	}
	fmt.Fprintf(w, "# HELP pg2iceberg_table_live_bytes Bytes of the data and delete files of each Iceberg table's current snapshot.\n# TYPE pg2iceberg_table_live_bytes gauge\n")
	for _, t := range tables {
		fmt.Fprintf(w, "pg2iceberg_table_live_bytes{table=\"%s\"} %d\n", labelEscaper.Replace(t.Table), t.Live.Bytes)
	}
	fmt.Fprintf(w, "# HELP pg2iceberg_outside_commits_total Snapshots another writer (Spark, maintain) committed that the bridge's commits found and reconciled, per table.\n# TYPE pg2iceberg_outside_commits_total counter\n")
	for _, t := range tables {
		fmt.Fprintf(w, "pg2iceberg_outside_commits_total{table=\"%s\"} %d\n", labelEscaper.Replace(t.Table), t.OutsideCommits)
	}
}

// compactionMetrics writes the compaction counters and each table's last
// compaction.
func compactionMetrics(w io.Writer, st *iceberg.Stats) {
	fmt.Fprintf(w, "# HELP pg2iceberg_compactions_total Mirror compactions installed.\n# TYPE pg2iceberg_compactions_total counter\npg2iceberg_compactions_total %d\n", st.Compactions.Load())
	fmt.Fprintf(w, "# HELP pg2iceberg_compaction_failures_total Mirror compactions that failed or could not be installed; a later one tries again.\n# TYPE pg2iceberg_compaction_failures_total counter\npg2iceberg_compaction_failures_total %d\n", st.CompactionFailures.Load())
	fmt.Fprintf(w, "# HELP pg2iceberg_compaction_rewritten_bytes_total Bytes of data files compactions rewrote.\n# TYPE pg2iceberg_compaction_rewritten_bytes_total counter\npg2iceberg_compaction_rewritten_bytes_total %d\n", st.BytesRewritten.Load())
	fmt.Fprintf(w, "# HELP pg2iceberg_table_last_compaction_timestamp_seconds When the bridge last installed a compaction of each table (tables it compacted since it started).\n# TYPE pg2iceberg_table_last_compaction_timestamp_seconds gauge\n")
	for _, t := range st.Tables() {
		if !t.LastCompaction.IsZero() {
			fmt.Fprintf(w, "pg2iceberg_table_last_compaction_timestamp_seconds{table=\"%s\"} %d\n", labelEscaper.Replace(t.Table), t.LastCompaction.Unix())
		}
	}
}
