package bridge

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

// healthz answers 200 while the bridge works as it should (copying, or
// streaming with a standby status sent within replication.HealthStall) and
// 503 otherwise (starting, reconnecting, stalled, stopping), with one line
// saying which.
func healthz(p *replication.Progress) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := p.Health(time.Now())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ok {
			fmt.Fprintf(w, "ok: %s\n", reason)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "unavailable: %s\n", reason)
	}
}
