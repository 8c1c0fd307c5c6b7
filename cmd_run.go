package main

import (
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "copy the published tables, then stream every change into Iceberg",
		Flags: flags(sourceFlags, []cli.Flag{
			flagServeCatalog,
			flagFlushInterval, flagFlushRows, flagFlushBytes, flagMemoryLimit, flagNoChangelog, flagConsistentTag, flagSpoolDir, flagReceiveTimeout, flagKeyIndexMemory, flagKeyIndexDir,
			flagBackfill, flagCopyWorkers, flagMetricsAddr, flagOnStaleTable, flagOnSlotLost, flagRetentionAge, flagRetentionKeep,
		}, catalogServerFlags),
		Action: runCmd,
	}
}

func runCmd(c *cli.Context) error {
	rules, err := loadOverrides(c)
	if err != nil {
		return err
	}
	log := newLogger(c)
	limit, err := parseBytes(c.String(flagMemoryLimit.Name))
	if err != nil {
		return err
	}
	cfg, err := runConfig(c, rules, log)
	if err != nil {
		return err
	}
	debug.SetMemoryLimit(limit)
	ctx, stop := signalContext(c)
	defer stop()
	return bridge.Run(ctx, cfg)
}
