package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/history"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:  "diff",
		Usage: "print the rows inserted, deleted and updated between two points of a table's history, by key",
		Description: `A point is a snapshot id (plain number), ref:NAME (a tag or branch),
   time:RFC3339 or lsn:X/Y. Only the files that changed between the two are read.
   Example:
   pg2iceberg diff --warehouse ./warehouse --table shop.orders --from lsn:0/16B3748 --to ref:month-end`,
		Flags:  flags(storageFlags, []cli.Flag{flagHistoryTable, flagFrom, flagTo, flagFormat}),
		Action: diffCmd,
	}
}

func diffCmd(c *cli.Context) error {
	from, err := history.ParsePoint(c.String(flagFrom.Name))
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	to, err := history.ParsePoint(c.String(flagTo.Name))
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	format := c.String(flagFormat.Name)
	if err := history.CheckFormat(format); err != nil {
		return err
	}
	_, tbl, err := openTable(c.Context, c)
	if err != nil {
		return err
	}
	d, err := history.Diff(c.Context, tbl, from, to)
	if err != nil {
		return err
	}
	if err := history.WriteDiff(os.Stdout, format, d); err != nil {
		return err
	}
	if format == "table" {
		fmt.Printf("snapshot %d to %d: %d inserted, %d deleted, %d updated (%d data files read)\n",
			d.From.SnapshotID, d.To.SnapshotID, d.Count(history.Inserted), d.Count(history.Deleted), d.Count(history.Updated), d.FilesRead)
	}
	return nil
}
