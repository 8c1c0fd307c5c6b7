package bridge

import (
	"errors"
	"log/slog"
	"net"
	"net/http"

	"golang.org/x/sync/errgroup"
)

// serveHTTP serves srv on ln in a goroutine of g until srv is closed or
// shut down; done is closed when that goroutine returns. A server that
// fails is logged (as failed) and stops, and the bridge goes on without
// it: it only reports, and the bridge's work does not depend on it.
func serveHTTP(g *errgroup.Group, srv *http.Server, ln net.Listener, failed string, log *slog.Logger) (done <-chan struct{}) {
	ch := make(chan struct{}) // closed by the serving goroutine
	g.Go(func() error {
		defer close(ch)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(failed, "error", err)
		}
		return nil
	})
	return ch
}
