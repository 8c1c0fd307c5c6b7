package bridge

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// newRegistry is what /metrics serves: the run's gauges and counters, read
// at each scrape from the progress, the copies and the sink's Stats (see
// collector); the flush histograms, observed by the sink after each flush;
// and the Go runtime's and the process's collectors.
func newRegistry(p *replication.Progress, st *iceberg.Stats, copies *copyProgress) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	h := newFlushHistograms()
	st.OnFlush = h.observe
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		h.took, h.latency, h.rows, h.bytes, &collector{p: p, st: st, copies: copies, metrics: metricDescs()})
	return reg
}

// flushHistograms are the distributions of the flushes committed.
type flushHistograms struct {
	took, latency, rows, bytes prometheus.Histogram
}

func newFlushHistograms() *flushHistograms {
	h := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	return &flushHistograms{
		took: h("pg2iceberg_flush_duration_seconds", "Time to write and commit a flush (every table it touched).",
			prometheus.ExponentialBuckets(0.01, 2, 14)),
		latency: h("pg2iceberg_commit_latency_seconds", "Time from the source commit of a flush's oldest transaction to the flush's Iceberg commit: the staleness of its oldest change.",
			prometheus.ExponentialBuckets(0.05, 2, 14)),
		rows: h("pg2iceberg_flush_rows", "Row changes per flush.", prometheus.ExponentialBuckets(1, 4, 12)),
		bytes: h("pg2iceberg_flush_bytes", "Parquet bytes per flush, before the commit.",
			prometheus.ExponentialBuckets(1024, 4, 12)),
	}
}

func (h *flushHistograms) observe(rows int, bytes int64, took, latency time.Duration) {
	h.took.Observe(took.Seconds())
	if latency > 0 {
		h.latency.Observe(latency.Seconds())
	}
	h.rows.Observe(float64(rows))
	h.bytes.Observe(float64(bytes))
}

// collector reads the run's state at each scrape into constant metrics:
// the values live where they are kept (atomics of the progress and the
// sink's Stats), not twice.
type collector struct {
	p       *replication.Progress
	st      *iceberg.Stats
	copies  *copyProgress
	metrics []metricDesc
}

// metricDesc is one metric of collector and how to read its samples.
type metricDesc struct {
	name   string
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	sample func(c *collector, emit func(v float64, labels ...string))
}

// family is a metric whose samples carry labels, one value each in the
// order of labels.
func family(name, help string, kind prometheus.ValueType, labels []string, sample func(c *collector, emit func(float64, ...string))) metricDesc {
	return metricDesc{name: name, desc: prometheus.NewDesc(name, help, labels, nil), kind: kind, sample: sample}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics {
		m.sample(c, func(v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, v, labels...)
		})
	}
}

// one is a metric of a single sample.
func one(name, help string, kind prometheus.ValueType, v func(c *collector) float64) metricDesc {
	return family(name, help, kind, nil, func(c *collector, emit func(float64, ...string)) { emit(v(c)) })
}

// perTable is a metric with a table label, from each table's status.
func perTable(name, help string, kind prometheus.ValueType, v func(t iceberg.TableStatus) (float64, bool)) metricDesc {
	return family(name, help, kind, []string{"table"}, func(c *collector, emit func(float64, ...string)) {
		for _, t := range c.st.Tables() {
			if x, ok := v(t); ok {
				emit(x, t.Table)
			}
		}
	})
}

const (
	gauge   = prometheus.GaugeValue
	counter = prometheus.CounterValue
)

// secondsSince is now minus t in seconds, 0 for a zero t.
func secondsSince(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return max(0, time.Since(t).Seconds())
}

// metricDescs are every metric collector serves (the names the Grafana
// dashboard in docs/ queries; a test checks them).
func metricDescs() []metricDesc {
	return append(streamDescs(), append(tableDescs(), maintenanceDescs()...)...)
}

func streamDescs() []metricDesc {
	return []metricDesc{
		one("pg2iceberg_received_lsn", "End LSN of the last WAL message received.", gauge, func(c *collector) float64 { return float64(c.p.Received()) }),
		one("pg2iceberg_acknowledged_lsn", "Flush LSN last acknowledged to PostgreSQL (committed to Iceberg).", gauge, func(c *collector) float64 { return float64(c.p.Acked()) }),
		one("pg2iceberg_server_wal_end_lsn", "Server WAL end reported by the walsender.", gauge, func(c *collector) float64 { return float64(c.p.ServerWALEnd()) }),
		one("pg2iceberg_lag_bytes", "WAL between the server's end and the acknowledged LSN.", gauge, func(c *collector) float64 { return float64(c.p.LagBytes()) }),
		one("pg2iceberg_replication_lag_seconds", "Age of the oldest source transaction received and not yet committed to Iceberg (0 when none waits).", gauge, func(c *collector) float64 {
			_, pending := c.st.SourceTimes()
			return secondsSince(pending)
		}),
		one("pg2iceberg_freshness_seconds", "Now minus the source commit time of the newest transaction durable in Iceberg (grows while the source is idle; 0 before the first).", gauge, func(c *collector) float64 {
			committed, _ := c.st.SourceTimes()
			return secondsSince(committed)
		}),
		one("pg2iceberg_changes_total", "Row changes committed to Iceberg.", counter, func(c *collector) float64 { return float64(c.st.Changes.Load()) }),
		one("pg2iceberg_flushes_total", "Flushes committed.", counter, func(c *collector) float64 { return float64(c.st.Flushes.Load()) }),
		one("pg2iceberg_ddl_events_ignored_total", "DDL events ignored: not signed by the DDL capture's trigger for their transaction, or malformed.", counter, func(c *collector) float64 { return float64(c.p.DDLIgnored()) }),
		one("pg2iceberg_changes_skipped_total", "Row changes and truncates skipped because their table is gone, no longer published, or cannot be mirrored as it is (see pg2iceberg_tables_need_human).", counter, func(c *collector) float64 { return float64(c.p.ChangesSkipped()) }),
		one("pg2iceberg_tables_need_human", "Tables whose changes are skipped until a human fixes them (a missing GRANT, a type without an Iceberg form, a bad key); /status says what to run.", gauge, func(c *collector) float64 { return float64(len(c.p.Attention())) }),
		family("pg2iceberg_table_needs_human", "1 for each table whose changes are skipped until a human fixes it; /status says what to run.", gauge, []string{"table"}, func(c *collector, emit func(float64, ...string)) {
			for _, a := range c.p.Attention() {
				emit(1, a.Table)
			}
		}),
		family("pg2iceberg_errors_total", "Errors the bridge survived, by kind: replication_connection (lost and opened again), expire, compaction.", counter, []string{"kind"}, func(c *collector, emit func(float64, ...string)) {
			emit(float64(c.p.Reconnects()), "replication_connection")
			emit(float64(c.st.ExpireFailures.Load()), "expire")
			emit(float64(c.st.CompactionFailures.Load()), "compaction")
		}),
		family("pg2iceberg_backfill_rows", "Rows copied by each table's backfill.", gauge, []string{"table"}, func(c *collector, emit func(float64, ...string)) {
			for table, v := range c.copies.snapshot() {
				emit(float64(v[0]), table)
			}
		}),
		family("pg2iceberg_backfill_rows_estimated", "Estimated rows of each table's backfill (the planner's count at its start).", gauge, []string{"table"}, func(c *collector, emit func(float64, ...string)) {
			for table, v := range c.copies.snapshot() {
				emit(float64(v[1]), table)
			}
		}),
	}
}

func tableDescs() []metricDesc {
	return []metricDesc{
		perTable("pg2iceberg_table_watermark_lsn", "LSN watermark of each Iceberg table.", gauge, func(t iceberg.TableStatus) (float64, bool) { return float64(t.Watermark), true }),
		family("pg2iceberg_table_live_files", "Files of each Iceberg table's current snapshot, by content.", gauge, []string{"table", "content"}, func(c *collector, emit func(float64, ...string)) {
			for _, t := range c.st.Tables() {
				emit(float64(t.Live.Data), t.Table, "data")
				emit(float64(t.Live.Deletes), t.Table, "deletes")
			}
		}),
		perTable("pg2iceberg_table_live_bytes", "Bytes of the data and delete files of each Iceberg table's current snapshot.", gauge, func(t iceberg.TableStatus) (float64, bool) { return float64(t.Live.Bytes), true }),
		perTable("pg2iceberg_key_index_keys", "Keys in each mirror's key index (one per live row).", gauge, func(t iceberg.TableStatus) (float64, bool) {
			return float64(t.IndexKeys), !strings.HasSuffix(t.Table, iceberg.ChangelogSuffix)
		}),
		perTable("pg2iceberg_table_last_commit_timestamp_seconds", "When the bridge last committed to each Iceberg table.", gauge, func(t iceberg.TableStatus) (float64, bool) {
			return float64(t.Committed.Unix()), !t.Committed.IsZero()
		}),
		perTable("pg2iceberg_outside_commits_total", "Snapshots another writer (Spark, maintain) committed that the bridge's commits found and reconciled, per table.", counter, func(t iceberg.TableStatus) (float64, bool) {
			return float64(t.OutsideCommits), true
		}),
	}
}

func maintenanceDescs() []metricDesc {
	return []metricDesc{
		one("pg2iceberg_expire_failures_total", "Snapshot expiries (or deletes of expired files) that failed; each is tried again at the next expiry.", counter, func(c *collector) float64 { return float64(c.st.ExpireFailures.Load()) }),
		one("pg2iceberg_snapshots_expired_total", "Snapshots removed by expiry after commits.", counter, func(c *collector) float64 { return float64(c.st.SnapshotsExpired.Load()) }),
		one("pg2iceberg_manifest_rewrites_total", "Manifest rewrites committed after commits (a table past "+strconv.Itoa(tiering.MaxManifests)+" data manifests).", counter, func(c *collector) float64 { return float64(c.st.ManifestRewrites.Load()) }),
		one("pg2iceberg_orphans_removed_total", "Orphan files removed (unreferenced, older than 3 days; a daily cleanup per table).", counter, func(c *collector) float64 { return float64(c.st.OrphansRemoved.Load()) }),
		one("pg2iceberg_orphan_bytes_removed_total", "Bytes of the orphan files removed.", counter, func(c *collector) float64 { return float64(c.st.OrphanBytes.Load()) }),
		family("pg2iceberg_abandoned_files_total", "Files written and abandoned before any commit named them (aborted writers, discarded speculation), by whether they were deleted.", counter, []string{"result"}, func(c *collector, emit func(float64, ...string)) {
			removed, kept := c.st.AbandonedFiles()
			emit(float64(removed), "removed")
			emit(float64(kept), "kept")
		}),
		one("pg2iceberg_compactions_total", "Mirror compactions installed.", counter, func(c *collector) float64 { return float64(c.st.Compactions.Load()) }),
		one("pg2iceberg_compaction_failures_total", "Mirror compactions that failed or could not be installed; a later one tries again.", counter, func(c *collector) float64 { return float64(c.st.CompactionFailures.Load()) }),
		one("pg2iceberg_compaction_rewritten_bytes_total", "Bytes of data files compactions rewrote.", counter, func(c *collector) float64 { return float64(c.st.BytesRewritten.Load()) }),
		one("pg2iceberg_tierings_total", "Rewrites installed that moved data files to a table's cold location.", counter, func(c *collector) float64 { return float64(c.st.Tierings.Load()) }),
		one("pg2iceberg_tiered_bytes_total", "Bytes of data files moved to cold locations.", counter, func(c *collector) float64 { return float64(c.st.BytesTiered.Load()) }),
		family("pg2iceberg_table_tier_bytes", "Bytes of each tiered table's live data files in its own location (hot) and its cold location, as of the last tiering check.", gauge, []string{"table", "tier"}, func(c *collector, emit func(float64, ...string)) {
			for _, t := range c.st.Tables() {
				if t.Tiered {
					emit(float64(t.HotBytes), t.Table, "hot")
					emit(float64(t.ColdBytes), t.Table, "cold")
				}
			}
		}),
		perTable("pg2iceberg_table_last_compaction_timestamp_seconds", "When the bridge last installed a compaction of each table (tables it compacted since it started).", gauge, func(t iceberg.TableStatus) (float64, bool) {
			return float64(t.LastCompaction.Unix()), !t.LastCompaction.IsZero()
		}),
	}
}
