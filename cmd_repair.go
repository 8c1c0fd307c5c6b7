package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
)

func repairCommand() *cli.Command {
	return &cli.Command{
		Name:      "repair",
		Usage:     "point tables' catalog entries at the newest valid metadata file in the warehouse",
		ArgsUsage: "namespace.table ...",
		Description: `For when the catalog and the files disagree: an entry lost, pointing at a
   missing file, or a catalog restored from an older copy. Stop the bridge first.
   Example:
   pg2iceberg repair --warehouse ./warehouse --dry-run shop.orders shop.orders__changelog`,
		Flags:  flags(storageFlags, []cli.Flag{flagDryRun, flagForce, flagLocation}),
		Action: repairCmd,
	}
}

func repairCmd(c *cli.Context) error {
	tables := c.Args().Slice()
	if len(tables) == 0 {
		return errors.New("name the tables to repair, e.g. pg2iceberg repair --warehouse ./warehouse shop.orders")
	}
	location := c.String(flagLocation.Name)
	if location != "" && len(tables) > 1 {
		return errors.New("--location applies to one table: repair the tables one by one")
	}
	dry := c.Bool(flagDryRun.Name)
	var errs []error
	for _, name := range tables {
		ident := strings.Split(name, ".")
		res, err := iceberg.Repair(c.Context, catalogConfig(c), ident, location, dry, c.Bool(flagForce.Name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		for _, s := range res.Skipped {
			fmt.Printf("%s: skipped %s\n", name, s)
		}
		was := res.Was
		if was == "" {
			was = "(no entry)"
		}
		switch {
		case !res.Changed:
			fmt.Printf("%s: the catalog already points at the newest valid metadata %s\n", name, res.Newest)
		case dry:
			fmt.Printf("%s: would point the catalog at %s (now %s)\n", name, res.Newest, was)
		default:
			fmt.Printf("%s: the catalog now points at %s (was %s)\n", name, res.Newest, was)
		}
	}
	return errors.Join(errs...)
}
