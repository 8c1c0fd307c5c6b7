package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/history"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

func tagCommand() *cli.Command {
	cmd := refCommand(table.TagRef)
	create := cmd.Subcommands[0]
	create.Usage = "point a new tag at a snapshot of one table, or with --all at one consistent cut of every table"
	create.Description += `
   pg2iceberg tag create --warehouse ./warehouse --all --name month-end [--lsn 0/16B3748]
   (--all: every table the bridge writes, each at its snapshot for one LSN,
   by default the newest complete cut)`
	create.Flags = append(create.Flags, flagTagAll, flagTagLSN)
	return cmd
}
func branchCommand() *cli.Command { return refCommand(table.BranchRef) }

// refCommand is tag's or branch's create, list and drop.
func refCommand(kind table.RefType) *cli.Command {
	k := string(kind)
	return &cli.Command{
		Name:  k,
		Usage: fmt.Sprintf("create, list or drop a table's %ss (a named snapshot that expiry keeps)", k),
		Subcommands: []*cli.Command{
			{
				Name:  "create",
				Usage: fmt.Sprintf("point a new %s at a snapshot (default: the current one)", k),
				Description: fmt.Sprintf(`Example:
   pg2iceberg %s create --warehouse ./warehouse --table shop.orders --name month-end --at lsn:0/16B3748`, k),
				Flags:  flags(storageFlags, []cli.Flag{flagRefTable, flagRefName, flagRefAt}),
				Action: func(c *cli.Context) error { return createRefCmd(c, kind) },
			},
			{
				Name:  "list",
				Usage: fmt.Sprintf("list the table's %ss", k),
				Flags: flags(storageFlags, []cli.Flag{flagHistoryTable, flagJSON}),
				Action: func(c *cli.Context) error {
					_, tbl, err := openTable(c.Context, c)
					if err != nil {
						return err
					}
					refs, err := history.Refs(tbl, kind)
					if err != nil {
						return err
					}
					return printRefs(refs, c.Bool(flagJSON.Name))
				},
			},
			{
				Name:  "drop",
				Usage: fmt.Sprintf("remove a %s (its snapshot may then expire)", k),
				Flags: flags(storageFlags, []cli.Flag{flagHistoryTable, flagRefName}),
				Action: func(c *cli.Context) error {
					cat, tbl, err := openTable(c.Context, c)
					if err != nil {
						return err
					}
					name := c.String(flagRefName.Name)
					if _, err := history.DropRef(c.Context, cat, tbl, name, kind); err != nil {
						return err
					}
					fmt.Printf("%s: %s %s dropped\n", c.String(flagHistoryTable.Name), k, name)
					return nil
				},
			},
		},
	}
}

// createRefCmd is tag or branch create: one table at --at, or (tags)
// every table at one cut with --all.
func createRefCmd(c *cli.Context, kind table.RefType) error {
	if c.Bool(flagTagAll.Name) {
		return tagAllCmd(c)
	}
	if c.String(flagTagLSN.Name) != "" {
		return fmt.Errorf("--lsn goes with --all; for one table give --at lsn:%s", c.String(flagTagLSN.Name))
	}
	if c.String(flagRefTable.Name) == "" {
		return errors.New("give --table namespace.table, or --all to tag every table at one consistent cut")
	}
	at, err := history.ParsePoint(c.String(flagRefAt.Name))
	if err != nil {
		return fmt.Errorf("--at: %w", err)
	}
	cat, tbl, err := openTable(c.Context, c)
	if err != nil {
		return err
	}
	snap, err := history.Resolve(tbl, at)
	if err != nil {
		return err
	}
	name := c.String(flagRefName.Name)
	if _, err := history.CreateRef(c.Context, cat, tbl, name, kind, snap.SnapshotID); err != nil {
		return err
	}
	fmt.Printf("%s: %s %s at snapshot %d\n", c.String(flagRefTable.Name), kind, name, snap.SnapshotID)
	return nil
}

// tagAllCmd tags every table the bridge writes at its snapshot for one
// LSN: --lsn, or the newest complete cut.
func tagAllCmd(c *cli.Context) error {
	if c.String(flagRefTable.Name) != "" || c.IsSet(flagRefAt.Name) {
		return errors.New("--all tags every table at one LSN: give --lsn (or nothing, for the newest complete cut), not --table or --at")
	}
	cat, err := iceberg.OpenCatalog(c.Context, catalogConfig(c))
	if err != nil {
		return err
	}
	tables, err := history.SourceTables(c.Context, cat)
	if err != nil {
		return err
	}
	var at decode.LSN
	if v := c.String(flagTagLSN.Name); v != "" {
		p, err := history.LSNPoint(v)
		if err != nil {
			return fmt.Errorf("--lsn: %w", err)
		}
		at = p.LSN
	} else if at, err = history.Cut(tables); err != nil {
		return err
	}
	name := c.String(flagRefName.Name)
	snaps, err := history.TagAll(c.Context, cat, tables, name, at)
	if err != nil {
		return err
	}
	for i, tbl := range tables {
		fmt.Printf("%s: tag %s at snapshot %d (lsn %s)\n", strings.Join(tbl.Identifier(), "."), name, snaps[i].SnapshotID, at)
	}
	return nil
}

func printRefs(refs []history.RefInfo, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, r := range refs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	var rows [][]string
	for _, r := range refs {
		rows = append(rows, []string{r.Name, r.Type, strconv.FormatInt(r.SnapshotID, 10), r.LSN})
	}
	return history.WriteTable(os.Stdout, []string{"name", "type", "snapshot", "lsn"}, rows)
}

func rollbackCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollback",
		Usage: "point a table back at an earlier snapshot; a mirror is then copied again from the source at the bridge's next start",
		Description: `The bridge must be stopped: for a table the bridge writes, give --source, and
   rollback holds the slot's lease while it commits (refused while a bridge holds it).
   A mirror is marked to be copied again, so the next start makes it equal to
   PostgreSQL again; a changelog cannot be copied again and is not rolled back.
   Example:
   pg2iceberg rollback --warehouse ./warehouse --table shop.orders --to month-end --source postgres://app@db/shop`,
		Flags:  flags(storageFlags, []cli.Flag{flagHistoryTable, flagRollTo, flagRollbackSource}),
		Action: rollbackCmd,
	}
}

func rollbackCmd(c *cli.Context) error {
	ctx := c.Context
	_, tbl, err := openTable(ctx, c)
	if err != nil {
		return err
	}
	name := c.String(flagHistoryTable.Name)
	if history.IsChangelog(tbl) {
		return fmt.Errorf("%s is a changelog: rolling it back would lose the changes after that snapshot for good (a changelog cannot be copied again from the source); read it as it was with pg2iceberg read --table %s --snapshot ID, or tag that snapshot", name, name)
	}
	to := c.String(flagRollTo.Name)
	p, err := history.SnapshotPoint(to)
	if err != nil {
		p = history.Point{Kind: history.Ref, Ref: strings.TrimPrefix(to, "ref:")}
	}
	snap, err := history.Resolve(tbl, p)
	if err != nil {
		return err
	}
	var props map[string]string
	if src := history.Source(tbl); src != "" {
		release, err := holdLease(ctx, c.String(flagRollbackSource.Name), src, name)
		if err != nil {
			return err
		}
		defer release()
		props = map[string]string{iceberg.PropRecopy: fmt.Sprintf("rolled back to snapshot %d by pg2iceberg rollback", snap.SnapshotID)}
	}
	if _, err := history.Rollback(ctx, tbl, snap.SnapshotID, props); err != nil {
		return err
	}
	fmt.Printf("%s: rolled back to snapshot %d\n", name, snap.SnapshotID)
	if props != nil {
		fmt.Printf("%s: the bridge's next start copies it again from the source, so it ends equal to PostgreSQL\n", name)
	}
	return nil
}

// holdLease takes the bridge's lease of the slot that wrote a table
// (source: its source identity, system id/database/slot), so no bridge
// streams into it while it is rolled back; release ends it.
func holdLease(ctx context.Context, url, source, table string) (release func(), err error) {
	parts := strings.Split(source, "/")
	if len(parts) < 3 {
		return nil, fmt.Errorf("%s: the bridge's source identity %q is not system/database/slot", table, source)
	}
	db, slot := parts[len(parts)-2], parts[len(parts)-1]
	if url == "" {
		return nil, fmt.Errorf("%s is written by the bridge (slot %s in database %s): give --source, the bridge's source URL, so that rollback can make sure the bridge is stopped", table, slot, db)
	}
	conn, err := replication.Connect(ctx, url) // the bridge's own session settings and TCP timeouts; errors scrubbed
	if err != nil {
		return nil, fmt.Errorf("--source: %w", err)
	}
	release = func() { _ = conn.Close(context.Background()) }
	var current string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&current); err != nil {
		release()
		return nil, fmt.Errorf("read the source's database: %w", err)
	}
	if current != db {
		release()
		return nil, fmt.Errorf("%s was written from database %s, but --source is database %s: give the bridge's own source URL", table, db, current)
	}
	if err := replication.Lease(ctx, conn, slot); err != nil {
		release()
		var inUse *replication.InUseError
		if errors.As(err, &inUse) {
			return nil, fmt.Errorf("the bridge is running (%w): stop it, roll back, then start it again; the start copies %s again", err, table)
		}
		return nil, err
	}
	return release, nil
}
