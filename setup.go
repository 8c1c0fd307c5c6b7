package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/replication"
)

// setupCmd installs, prints or removes the DDL capture (replication.SetupSQL).
func setupCmd(c *cli.Context) error {
	if c.Bool("print") {
		switch {
		case c.Bool("uninstall"):
			fmt.Print(replication.UninstallSQL)
		case c.String("grant-to") != "":
			fmt.Print(replication.SetupSQL + replication.GrantSQL(c.String("grant-to")))
		default:
			grant := strings.TrimSuffix(grantTemplate(), "\n")
			fmt.Print(replication.SetupSQL + "-- If the bridge's role is not a superuser, it needs to read the key:\n-- " +
				strings.ReplaceAll(grant, "\n", "\n-- ") + "\n")
		}
		return nil
	}
	if c.String("source") == "" {
		return errors.New("--source is required to install the DDL capture (or use --print to see the SQL)")
	}
	conn, err := replication.Connect(c.Context, c.String("source"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := replication.Setup(c.Context, conn, c.Bool("uninstall"), c.String("grant-to")); err != nil {
		return err
	}
	switch {
	case c.Bool("uninstall"):
		fmt.Println("DDL capture removed")
	case c.String("grant-to") != "":
		fmt.Printf("DDL capture installed: event trigger pg2iceberg_ddl; role %s may read its key\n", c.String("grant-to"))
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
