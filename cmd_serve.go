package main

import (
	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the warehouse as a read-only Iceberg REST catalog for Spark, Trino, pyiceberg, DuckDB",
		Description: `Example:
   pg2iceberg serve --warehouse ./warehouse --listen 127.0.0.1:8181
   then point an engine at http://127.0.0.1:8181 (see docs/querying.md)`,
		Flags:  flags(storageFlags, []cli.Flag{flagListen}, catalogServerFlags),
		Action: serveCmd,
	}
}

func serveCmd(c *cli.Context) error {
	ctx, cancel := signalContext(c)
	defer cancel()
	cfg, err := catalogServerConfig(c, c.String(flagListen.Name), c.IsSet(flagListen.Name), newLogger(c))
	if err != nil {
		return err
	}
	return bridge.ServeCatalog(ctx, cfg)
}
