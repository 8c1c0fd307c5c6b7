package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

var flagDebug = &cli.BoolFlag{Name: "debug", EnvVars: env("debug"), Usage: "log at debug level"}

// commandFlags lets --debug follow the command as well as precede it, and
// makes a usage error (an unknown flag) one line that points at --help
// instead of the command's whole help.
func commandFlags(app *cli.App) {
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w (see pg2iceberg --help)", err)
	}
	for _, cmd := range app.Commands {
		cmd.Flags = append(cmd.Flags, flagDebug)
		name := cmd.Name
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w (see pg2iceberg %s --help)", err, name)
		}
	}
}

// debugLevel reports whether --debug was given before or after the command.
func debugLevel(c *cli.Context) bool {
	for _, x := range c.Lineage() {
		if x.Bool(flagDebug.Name) {
			return true
		}
	}
	return false
}
