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

// scrubActions makes every command's error go through scrubber. A command
// that only groups others (tag, branch, config) keeps no action of its
// own, so that run alone it prints its help.
func scrubActions(app *cli.App) {
	var wrap func(cmds []*cli.Command)
	wrap = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			wrap(cmd.Subcommands)
			if action := cmd.Action; action != nil {
				cmd.Action = func(c *cli.Context) error { return scrubber(c).Wrap(action(c)) }
			}
		}
	}
	wrap(app.Commands)
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
