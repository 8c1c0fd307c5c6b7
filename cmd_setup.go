package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

// setupSource is --source as setup takes it: a superuser's, and not needed
// to print the SQL.
var setupSource = func() *cli.StringFlag {
	f := *flagSource
	f.Required, f.Usage = false, flagSource.Usage+" (a superuser; not needed with --print)"
	return &f
}()

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:   "setup",
		Usage:  "install the DDL capture (an event trigger) so renames propagate exactly and schema changes apply at commit; run once as a superuser",
		Flags:  []cli.Flag{setupSource, flagPrint, flagUninstall, flagGrantTo},
		Action: setupCmd,
	}
}

// setupCmd installs, prints or removes the DDL capture (replication.SetupSQL).
func setupCmd(c *cli.Context) error {
	if c.Bool(flagPrint.Name) {
		switch {
		case c.Bool(flagUninstall.Name):
			fmt.Print(replication.UninstallSQL)
		case c.String(flagGrantTo.Name) != "":
			fmt.Print(replication.SetupSQL + replication.GrantSQL(c.String(flagGrantTo.Name)))
		default:
			grant := strings.TrimSuffix(grantTemplate(), "\n")
			fmt.Print(replication.SetupSQL + "-- If the bridge's role is not a superuser, it needs to read the key:\n-- " +
				strings.ReplaceAll(grant, "\n", "\n-- ") + "\n")
		}
		return nil
	}
	if c.String(setupSource.Name) == "" {
		return errors.New("--source is required to install the DDL capture (or use --print to see the SQL)")
	}
	conn, err := replication.Connect(c.Context, c.String(setupSource.Name))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := replication.Setup(c.Context, conn, c.Bool(flagUninstall.Name), c.String(flagGrantTo.Name)); err != nil {
		return err
	}
	switch {
	case c.Bool(flagUninstall.Name):
		fmt.Println("DDL capture removed")
	case c.String(flagGrantTo.Name) != "":
		fmt.Printf("DDL capture installed: event trigger pg2iceberg_ddl; role %s may read its key\n", c.String(flagGrantTo.Name))
	default:
		fmt.Println("DDL capture installed: event trigger pg2iceberg_ddl")
		fmt.Println("If the bridge's role is not a superuser, run setup again with --grant-to <bridge role>, or as a superuser:")
		fmt.Print(grantTemplate())
	}
	return nil
}

// grantTemplate is replication.GrantSQL for a role to fill in.
func grantTemplate() string {
	return strings.ReplaceAll(replication.GrantSQL("ROLE"), `"ROLE"`, "<bridge role>")
}
