package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pglogrepl"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

// freshnessRun is the commit-to-visibility delay on one target.
type freshnessRun struct {
	Target        string  `json:"target"`
	LoadSeconds   float64 `json:"load_seconds"`
	RowsPerSecSet int     `json:"rows_per_sec_planned"`
	RowsPerSec    float64 `json:"rows_per_sec_achieved"`
	TxnRows       int     `json:"txn_rows"`
	Transactions  int     `json:"transactions"`
	Rows          int64   `json:"rows"`
	FlushInterval string  `json:"flush_interval"`
	PollSeconds   float64 `json:"catalog_poll_seconds"`
	// Delays from the client's COMMIT returning to the first catalog read
	// whose mirror watermark covers the transaction, in seconds.
	P50               float64 `json:"p50_seconds"`
	P90               float64 `json:"p90_seconds"`
	P99               float64 `json:"p99_seconds"`
	Max               float64 `json:"max_seconds"`
	Mean              float64 `json:"mean_seconds"`
	Snapshots         int     `json:"mirror_snapshots"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	CPUSecondsPerMRow float64 `json:"cpu_seconds_per_million_rows"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`
}

type freshnessResult struct {
	Date    string         `json:"date"`
	Mode    string         `json:"mode"`
	Machine machineInfo    `json:"machine"`
	Build   buildInfo      `json:"bridge_build"`
	Runs    []freshnessRun `json:"runs"`
	Bars    []barCheck     `json:"bars"`
}

// observation is a watermark seen in the catalog at a time.
type observation struct {
	at  time.Time
	lsn pglogrepl.LSN
}

// committed is a load transaction: the WAL position before its COMMIT and
// when the COMMIT returned.
type committed struct {
	pre pglogrepl.LSN
	at  time.Time
}

const freshPoll = 50 * time.Millisecond

func (e *env) runFreshness(ctx context.Context) (*freshnessResult, error) {
	res := &freshnessResult{Date: e.date, Mode: e.mode(), Machine: e.machine, Build: e.build}
	for _, name := range e.cfg.targets {
		r, err := e.freshnessOn(ctx, name)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, r)
	}
	res.Bars = freshnessBars(res)
	return res, nil
}

func (e *env) freshnessOn(ctx context.Context, targetName string) (freshnessRun, error) {
	const pub = "pub_fresh"
	id := "fresh"
	w := &workload{name: id, table: "bench.fresh_" + targetName}
	conn, err := e.pg.Conn(ctx, benchDB)
	if err != nil {
		return freshnessRun{}, err
	}
	defer conn.Close(context.Background())
	for _, s := range []string{
		"DROP PUBLICATION IF EXISTS " + pub,
		"CREATE TABLE " + w.table + " (id bigserial PRIMARY KEY, v integer NOT NULL, payload text NOT NULL, created timestamptz NOT NULL DEFAULT clock_timestamp()) WITH (autovacuum_enabled = false)",
		"CREATE PUBLICATION " + pub + " FOR TABLE " + w.table,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return freshnessRun{}, fmt.Errorf("%s: %w", s, err)
		}
	}
	// The load commits as PostgreSQL does by default (the harness turns
	// synchronous_commit off for speed), so each commit is sent at once.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return freshnessRun{}, fmt.Errorf("set synchronous_commit: %w", err)
	}
	t := e.target(targetName, id)
	defer func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", t.slot)
		_, _ = conn.Exec(context.Background(), "DROP PUBLICATION IF EXISTS "+pub)
	}()

	logf("freshness on %s: %d rows/s in %d-row transactions for %s, default flush settings", targetName, e.cfg.freshnessRate, e.cfg.freshnessTxnRows, e.cfg.freshnessDuration)
	profile := e.profile("freshness-" + targetName)
	b, err := e.startBridge(t, pub, false, profile)
	if err != nil {
		return freshnessRun{}, err
	}
	defer b.stop(time.Minute)
	if err := b.waitStreaming(ctx, 5*time.Minute); err != nil {
		return freshnessRun{}, err
	}
	cat, err := e.openCatalog(ctx, t)
	if err != nil {
		return freshnessRun{}, err
	}
	mid, _ := iceberg.Identifiers("bench", "fresh_"+targetName)
	before, err := cat.LoadTable(ctx, mid)
	if err != nil {
		return freshnessRun{}, fmt.Errorf("load %v: %w", mid, err)
	}
	snaps0 := len(before.Metadata().Snapshots())

	// Poll the catalog, as a reader would, for the mirror's watermark.
	var (
		mu   sync.Mutex // guards obs and pollErr
		obs  []observation
		last *table.Table
	)
	var pollErr error
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		var prev pglogrepl.LSN
		for pollCtx.Err() == nil {
			tbl, err := cat.LoadTable(pollCtx, mid)
			at := time.Now()
			if err != nil {
				if pollCtx.Err() == nil {
					mu.Lock()
					pollErr = err
					mu.Unlock()
				}
				return
			}
			lsn, _, err := iceberg.Watermark(tbl, "")
			if err == nil && lsn > prev {
				prev = lsn
				mu.Lock()
				obs = append(obs, observation{at: at, lsn: lsn})
				last = tbl
				mu.Unlock()
			}
			select {
			case <-pollCtx.Done():
			case <-time.After(freshPoll):
			}
		}
	}()

	// The steady load.
	per := e.cfg.freshnessTxnRows
	interval := time.Duration(float64(time.Second) * float64(per) / float64(e.cfg.freshnessRate))
	insert := "INSERT INTO " + w.table + " (v, payload) SELECT g, md5(g::text) FROM generate_series(1, $1) AS g"
	var txns []committed
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= e.cfg.freshnessDuration {
			break
		}
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				stopPoll()
				return freshnessRun{}, ctx.Err()
			case <-time.After(d):
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			stopPoll()
			return freshnessRun{}, fmt.Errorf("begin: %w", err)
		}
		if _, err := tx.Exec(ctx, insert, per); err != nil {
			_ = tx.Rollback(ctx)
			stopPoll()
			return freshnessRun{}, fmt.Errorf("load insert: %w", err)
		}
		pre, err := insertLSN(ctx, tx)
		if err != nil {
			_ = tx.Rollback(ctx)
			stopPoll()
			return freshnessRun{}, err
		}
		if err := tx.Commit(ctx); err != nil {
			stopPoll()
			return freshnessRun{}, fmt.Errorf("commit: %w", err)
		}
		txns = append(txns, committed{pre: pre, at: time.Now()})
	}
	loadSecs := time.Since(start).Seconds()
	lastPre := txns[len(txns)-1].pre

	// Wait until the last transaction is visible.
	deadline := time.Now().Add(iceberg.DefaultFlushInterval + time.Minute)
	for {
		mu.Lock()
		done := len(obs) > 0 && obs[len(obs)-1].lsn > lastPre
		perr := pollErr
		mu.Unlock()
		if done {
			break
		}
		if perr != nil {
			stopPoll()
			return freshnessRun{}, fmt.Errorf("poll the catalog: %w", perr)
		}
		if time.Now().After(deadline) {
			stopPoll()
			return freshnessRun{}, fmt.Errorf("the last load transaction was not visible within %s of the load's end%s", iceberg.DefaultFlushInterval+time.Minute, b.logTail())
		}
		select {
		case <-ctx.Done():
			stopPoll()
			return freshnessRun{}, ctx.Err()
		case <-b.exited:
			stopPoll()
			return freshnessRun{}, fmt.Errorf("the bridge exited during the freshness load%s", b.logTail())
		case <-time.After(freshPoll):
		}
	}
	stopPoll()
	<-pollDone
	if err := b.stop(5 * time.Minute); err != nil {
		return freshnessRun{}, err
	}

	delays := make([]float64, 0, len(txns))
	for _, c := range txns {
		i := sort.Search(len(obs), func(i int) bool { return obs[i].lsn > c.pre })
		delays = append(delays, obs[i].at.Sub(c.at).Seconds())
	}
	slices.Sort(delays)
	var sum float64
	for _, d := range delays {
		sum += d
	}
	rows := int64(len(txns) * per)
	ru := b.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	r := freshnessRun{
		Target: targetName, LoadSeconds: loadSecs, RowsPerSecSet: e.cfg.freshnessRate,
		RowsPerSec: float64(rows) / loadSecs, TxnRows: per, Transactions: len(txns), Rows: rows,
		FlushInterval: iceberg.DefaultFlushInterval.String(), PollSeconds: freshPoll.Seconds(),
		P50: quantile(delays, 0.50), P90: quantile(delays, 0.90), P99: quantile(delays, 0.99),
		Max: delays[len(delays)-1], Mean: sum / float64(len(delays)),
		Snapshots:  len(last.Metadata().Snapshots()) - snaps0,
		CPUSeconds: cpu, CPUSecondsPerMRow: cpu / float64(rows) * 1e6,
		PeakRSSMiB: float64(ru.Maxrss) / 1024,
	}
	logf("freshness on %s: %d transactions (%.0f rows/s), commit to visible p50 %.2fs, p90 %.2fs, p99 %.2fs, max %.2fs; %d snapshots",
		targetName, r.Transactions, r.RowsPerSec, r.P50, r.P90, r.P99, r.Max, r.Snapshots)
	return r, nil
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
