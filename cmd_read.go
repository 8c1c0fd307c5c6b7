package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/history"
)

func readCommand() *cli.Command {
	return &cli.Command{
		Name:  "read",
		Usage: "print a table's rows, now or at a snapshot, time, tag or branch, or source LSN",
		Description: `Example:
   pg2iceberg read --warehouse ./warehouse --table shop.orders --lsn 0/16B3748 --where "status = 'open'" --columns id,amount
   (see docs/querying.md for --where)`,
		Flags: flags(storageFlags, []cli.Flag{flagHistoryTable, flagAtSnapshot, flagAtTime, flagAtRef, flagAtLSN,
			flagWhere, flagColumns, flagLimit, flagFormat}),
		Action: readCmd,
	}
}

func readCmd(c *cli.Context) error {
	at, err := readPoint(c)
	if err != nil {
		return err
	}
	cfg := history.ReadConfig{At: at, Limit: c.Int64(flagLimit.Name), Format: c.String(flagFormat.Name)}
	if cfg.Limit < 0 {
		return fmt.Errorf("--limit %d: give 0 (all rows) or more", cfg.Limit)
	}
	for _, col := range c.StringSlice(flagColumns.Name) {
		if col = strings.TrimSpace(col); col != "" {
			cfg.Columns = append(cfg.Columns, col)
		}
	}
	if w := c.String(flagWhere.Name); w != "" {
		if cfg.Where, err = history.ParseWhere(w); err != nil {
			return err
		}
	}
	if err := history.CheckFormat(cfg.Format); err != nil {
		return err
	}
	_, tbl, err := openTable(c.Context, c)
	if err != nil {
		return err
	}
	_, err = history.Read(c.Context, tbl, cfg, os.Stdout)
	return err
}

// readPoint is the one of --snapshot, --time, --ref and --lsn given, or
// the current snapshot.
func readPoint(c *cli.Context) (history.Point, error) {
	var given []string
	for _, f := range []string{flagAtSnapshot.Name, flagAtTime.Name, flagAtRef.Name, flagAtLSN.Name} {
		if c.IsSet(f) {
			given = append(given, "--"+f)
		}
	}
	switch {
	case len(given) > 1:
		return history.Point{}, fmt.Errorf("give one of --snapshot, --time, --ref and --lsn, not %s", strings.Join(given, " and "))
	case c.IsSet(flagAtSnapshot.Name):
		return history.Point{Kind: history.Snapshot, ID: c.Int64(flagAtSnapshot.Name)}, nil
	case c.IsSet(flagAtTime.Name):
		return history.TimePoint(c.String(flagAtTime.Name))
	case c.IsSet(flagAtRef.Name):
		if c.String(flagAtRef.Name) == "" {
			return history.Point{}, errors.New("--ref is empty: name a tag or branch")
		}
		return history.Point{Kind: history.Ref, Ref: c.String(flagAtRef.Name)}, nil
	case c.IsSet(flagAtLSN.Name):
		return history.LSNPoint(c.String(flagAtLSN.Name))
	}
	return history.Point{}, nil
}
