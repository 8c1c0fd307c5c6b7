package main

import (
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
)

// backfillWorkers is --backfill-workers as backfill words it.
var backfillWorkers = func() *cli.IntFlag {
	f := *flagCopyWorkers
	f.Usage = "connections copying in parallel"
	return &f
}()

func backfillCommand() *cli.Command {
	return &cli.Command{
		Name:   "backfill",
		Usage:  "copy one table again, replacing its mirror's rows in one snapshot (stop the bridge first)",
		Flags:  flags(sourceFlags, []cli.Flag{flagTable, backfillWorkers}),
		Action: backfillCmd,
	}
}

func backfillCmd(c *cli.Context) error {
	rules, err := loadOverrides(c)
	if err != nil {
		return err
	}
	cfg, err := sourceConfig(c, newLogger(c))
	if err != nil {
		return err
	}
	cfg.Rules, cfg.CopyWorkers = rules, c.Int(backfillWorkers.Name)
	ctx, stop := signalContext(c)
	defer stop()
	return bridge.Backfill(ctx, cfg, c.String(flagTable.Name))
}
