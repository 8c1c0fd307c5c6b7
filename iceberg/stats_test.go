package iceberg

import (
	"testing"
	"time"
)

// The source commit times behind freshness and lag: the oldest pending
// transaction's until its flush, then the newest durable one's, never
// going back.
func TestStatsSourceTimes(t *testing.T) {
	var st Stats
	var flushes []time.Duration
	st.OnFlush = func(rows int, bytes int64, took, latency time.Duration) { flushes = append(flushes, latency) }
	t0 := time.Now().Add(-10 * time.Second)
	if c, p := st.SourceTimes(); !c.IsZero() || !p.IsZero() {
		t.Fatalf("SourceTimes before anything = %v, %v; want zero", c, p)
	}
	st.pendingSince(t0)
	if _, p := st.SourceTimes(); !p.Equal(t0) {
		t.Errorf("oldest pending = %v, want %v", p, t0)
	}
	st.flushed(10, 100, time.Millisecond, t0.Add(time.Second))
	c, p := st.SourceTimes()
	if !c.Equal(t0.Add(time.Second)) || !p.IsZero() {
		t.Errorf("after the flush: committed %v, pending %v; want %v and zero", c, p, t0.Add(time.Second))
	}
	if len(flushes) != 1 || flushes[0] < 10*time.Second {
		t.Errorf("flush latencies %v, want one of at least 10s", flushes)
	}
	st.sourceCommitted(t0) // an older time does not move it back
	if c, _ := st.SourceTimes(); !c.Equal(t0.Add(time.Second)) {
		t.Errorf("committed went back to %v", c)
	}
}
