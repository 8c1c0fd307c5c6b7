package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:   "status",
		Usage:  "print slot lag and each table's watermark",
		Flags:  flags(sourceFlags),
		Action: statusCmd,
	}
}

// statusCmd reports state: it checks no types of mirrored tables; the
// rules of --config are read only to check tables not mirrored yet.
func statusCmd(c *cli.Context) error {
	cfg, err := sourceConfig(c, newLogger(c))
	if err != nil {
		return err
	}
	if cfg.Rules, err = loadOverrides(c); err != nil { // only to check tables not mirrored yet
		return err
	}
	return bridge.Status(c.Context, cfg, os.Stdout)
}
