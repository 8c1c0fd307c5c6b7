package main

import (
	"io"
	"os"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

// stderrTerminal is stderr when it is a terminal, else nil: the log and
// the copies' progress bars then share it, each bar on its own last line.
var stderrTerminal = func() *replication.Terminal {
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return replication.NewTerminal(os.Stderr)
	}
	return nil
}()

// logOutput is where log lines go: through the terminal on one.
func logOutput() io.Writer {
	if stderrTerminal != nil {
		return stderrTerminal
	}
	return os.Stderr
}
