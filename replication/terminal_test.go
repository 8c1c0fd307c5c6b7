package replication

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pg2iceberg/pg2iceberg/decode"
)

// screen renders what a terminal shows for out: \r returns to the line's
// start, ESC[K erases to its end, \n starts a new line.
func screen(out string) []string {
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines = append(lines, "")
			col = 0
		case strings.HasPrefix(out[i:], "\x1b[K"):
			*cur = (*cur)[:col]
			i += 2
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(out[i]) + (*cur)[col+1:]
			} else {
				*cur += string(out[i])
			}
			col++
		}
	}
	return lines
}

// On a terminal the progress bar has its own line under the log lines,
// never a log line's end; it shows no "ETA ?" and ends with a line of
// rows, time and rate.
func TestProgressBarOwnLine(t *testing.T) {
	var out bytes.Buffer
	term := terminalFor(&out)
	log := slog.New(slog.NewTextHandler(term, nil))
	rel := &decode.Relation{Schema: "public", Name: "big"}
	for _, estimate := range []int64{10000, 0} {
		p := &copyProgress{rel: rel, log: log, estimate: estimate, start: time.Now(), cfg: progressConfig(term)}
		for i := 0; i < 3; i++ {
			p.last = time.Time{} // a redraw is due
			if err := p.add(1000, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			log.Info("copy chunk committed", "table", "public.big", "n", i)
		}
		p.done()
		log.Info("copy finished", "table", "public.big")
	}
	raw := out.String()
	// The bar was drawn, with a percentage only when estimated, and drawn
	// again under each log line.
	for _, w := range []string{"public.big             [####------------]  30% 3000 rows ", "public.big             3000 rows ", "n=0\npublic.big "} {
		if !strings.Contains(raw, w) {
			t.Errorf("output lacks %q:\n%q", w, raw)
		}
	}
	lines := screen(raw)
	var logs, finals int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "time="):
			logs++
			if strings.Contains(l, "/s") || strings.Contains(l, "[") {
				t.Errorf("a log line shares its line with the bar: %q", l)
			}
		case strings.HasPrefix(l, "public.big: 3000 rows in "):
			finals++
		case l != "":
			t.Errorf("line %q is neither a log line nor a final line", l)
		}
		if strings.Contains(l, "ETA ?") {
			t.Errorf("line %q shows ETA ?", l)
		}
	}
	if logs != 8 || finals != 2 {
		t.Errorf("screen has %d log lines and %d final lines, want 8 and 2:\n%s", logs, finals, strings.Join(lines, "\n"))
	}
}

func terminalFor(w *bytes.Buffer) *Terminal { return NewTerminal(w) }
func progressConfig(t *Terminal) CopyConfig { return CopyConfig{Terminal: t} }

func TestBarText(t *testing.T) {
	for _, tc := range []struct {
		rows, estimate int64
		rate           float64
		want           string
	}{
		{500_000, 1_000_000, 100_000, "public.orders          [########--------]  50% 500.0k rows 100.0k/s ETA 5s"},
		{2_000_000, 1_000_000, 100_000, "public.orders          [################] 100% 2.00M rows 100.0k/s"},
		{1234, 0, 0, "public.orders          1234 rows 0/s"},
	} {
		if got := barText("public.orders", tc.rows, tc.estimate, tc.rate); got != tc.want || len(got) >= 80 {
			t.Errorf("barText(%d, %d, %v) = %q, want %q (under 80 columns)", tc.rows, tc.estimate, tc.rate, got, tc.want)
		}
	}
	if got, want := finalText("public.orders", 3000, 1000, 2*time.Second), "public.orders: 3000 rows in 2s (1000 rows/s), 1000 of them kept from before the restart"; got != want {
		t.Errorf("finalText = %q, want %q", got, want)
	}
}
