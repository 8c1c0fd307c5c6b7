package main

import (
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/connstr"
)

// scrubber removes the secrets of --source and --catalog from what the
// process prints: a last guard behind the packages' own redaction, for a
// library message that echoes a connection string.
func scrubber(c *cli.Context) *connstr.Scrubber {
	s := connstr.NewScrubber(c.String(flagSource.Name), c.String(flagCatalog.Name))
	if rc, err := restConfig(c).Resolve(); err == nil {
		s.Add(rc.Secrets()...)
	} else {
		s.Add(os.Getenv(envRESTClientSecret), os.Getenv(envRESTToken))
	}
	return s
}

// scrubActions makes every command's error go through scrubber.
func scrubActions(app *cli.App) {
	for _, cmd := range app.Commands {
		action := cmd.Action
		cmd.Action = func(c *cli.Context) error { return scrubber(c).Wrap(action(c)) }
	}
}

// scrubAttr is a slog ReplaceAttr that scrubs strings and errors.
func scrubAttr(s *connstr.Scrubber) func([]string, slog.Attr) slog.Attr {
	return func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(s.Scrub(a.Value.String()))
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				a.Value = slog.StringValue(s.Scrub(err.Error()))
			}
		}
		return a
	}
}
