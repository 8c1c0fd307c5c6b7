package replication

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Terminal is a terminal that log lines and a copy's progress bar share:
// the bar has the last line to itself, and every log line is written
// above it (the bar is erased, the line written, the bar drawn again).
// The log's handler writes through Write, the copy through the bar
// methods; all are safe for concurrent use.
type Terminal struct {
	mu  sync.Mutex // guards w and bar
	w   io.Writer
	bar string // the bar shown on the last line, "" for none
}

// NewTerminal returns a Terminal writing to w.
func NewTerminal(w io.Writer) *Terminal { return &Terminal{w: w} }

// eraseLine returns to the line's start and erases it.
const eraseLine = "\r\x1b[K"

// Write writes log output, whole lines, above the bar.
func (t *Terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == "" {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, eraseLine); err != nil {
		return 0, err
	}
	n, err := t.w.Write(p)
	if err != nil {
		return n, err
	}
	_, err = io.WriteString(t.w, t.bar)
	return n, err
}

// setBar draws s as the bar, in place of the one shown.
func (t *Terminal) setBar(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bar = s
	_, _ = io.WriteString(t.w, eraseLine+s)
}

// endBar replaces the bar by final, a line that stays.
func (t *Terminal) endBar(final string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bar = ""
	_, _ = io.WriteString(t.w, eraseLine+final+"\n")
}

// barText is a table's progress bar: under 80 columns so that it never
// wraps (a wrapped bar could not be erased), the percentage and the ETA
// only when there is an estimate to base them on.
func barText(table string, rows, estimate int64, rate float64) string {
	const width = 16
	if len(table) > 22 {
		table = table[:21] + "~"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s ", table)
	if estimate > 0 {
		frac := min(float64(rows)/float64(estimate), 1)
		filled := int(frac * width)
		fmt.Fprintf(&b, "[%s%s] %3.0f%% ", strings.Repeat("#", filled), strings.Repeat("-", width-filled), 100*frac)
	}
	fmt.Fprintf(&b, "%s rows %s/s", shortCount(float64(rows)), shortCount(rate))
	if estimate > rows && rate > 0 {
		fmt.Fprintf(&b, " ETA %s", (time.Duration(float64(estimate-rows)/rate) * time.Second).Round(time.Second))
	}
	return b.String()
}

// finalText is the line a table's bar ends with.
func finalText(table string, rows, kept int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s: %d rows in %s (%d rows/s)", table, rows, elapsed.Round(time.Millisecond),
		int64(float64(rows-kept)/max(elapsed.Seconds(), 0.001)))
	if kept > 0 {
		s += fmt.Sprintf(", %d of them kept from before the restart", kept)
	}
	return s
}

// shortCount prints n in at most 6 characters: 9999, 12.3k, 4.56M.
func shortCount(n float64) string {
	switch {
	case n < 10_000:
		return fmt.Sprintf("%d", int64(n))
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", n/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.2fM", n/1e6)
	}
	return fmt.Sprintf("%.2fG", n/1e9)
}
