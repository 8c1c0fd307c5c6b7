package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

func maintainCommand() *cli.Command {
	return &cli.Command{
		Name:  "maintain",
		Usage: "expire snapshots, rewrite manifests and remove orphan files of the bridge's tables, once",
		Description: `Runs on every table the bridge writes (or --table) and prints per table what
   it did. Works with the bridge stopped; while a bridge writes the warehouse
   it leaves the manifest rewrite to it and refuses --orphans-older-than under 24h.
   Example:
   pg2iceberg maintain --warehouse ./warehouse --orphans-older-than 72h --dry-run`,
		Flags: flags(storageFlags, []cli.Flag{
			flagMaintainTable, flagOrphanAge, flagDryRun, flagConfig, flagRetentionAge, flagRetentionKeep,
		}),
		Action: maintainCmd,
	}
}

func maintainCmd(c *cli.Context) error {
	rules, err := loadOverrides(c)
	if err != nil {
		return err
	}
	r, err := retentionFlags(c)
	if err != nil {
		return err
	}
	age := c.Duration(flagOrphanAge.Name)
	ctx, stop := signalContext(c)
	defer stop()
	_, err = bridge.Maintain(ctx, bridge.MaintainConfig{
		Catalog:          catalogConfig(c),
		Table:            c.String(flagMaintainTable.Name),
		OrphansOlderThan: &age,
		DryRun:           c.Bool(flagDryRun.Name),
		Retention:        r,
		Rules:            rules,
		Out:              os.Stdout,
		Log:              newLogger(c),
	})
	return err
}

// retentionFlags is the retention --retention-max-age and
// --retention-min-snapshots give (zero fields: not given).
func retentionFlags(c *cli.Context) (tiering.Retention, error) {
	r := tiering.Retention{MaxSnapshotAge: c.Duration(flagRetentionAge.Name), MinSnapshots: c.Int(flagRetentionKeep.Name)}
	return r, r.Validate()
}
