// Command pg2iceberg streams a PostgreSQL publication into Apache Iceberg
// tables: a mirror (current state) and a changelog (every change) per table.
//
// main turns flags, environment variables (PG2ICEBERG_<FLAG>) and the
// configuration file into each command's configuration (bridge.Config, the
// catalog server's, repair's, setup's) and calls the package that does the
// work; each command is in its own file (cmd_*.go), every flag in flags.go.
// It starts no goroutine but the signal handler's: bridge.Run starts and
// joins the run's.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // zone names of timestamptz rules, the same on every host

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/bridge"
	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/mapping"
	"github.com/pg2iceberg/pg2iceberg/parquetx"
	"github.com/pg2iceberg/pg2iceberg/replication"
)

func main() {
	// Process-wide, once, before any Parquet file is written: pages are
	// compressed without zstd's content checksum (see parquetx).
	if err := parquetx.UseFastZstd(); err != nil {
		fmt.Fprintln(os.Stderr, "pg2iceberg:", err)
		os.Exit(1)
	}
	app := newApp()
	if err := applySettings(app, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "pg2iceberg:", err)
		os.Exit(1)
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "pg2iceberg:", err)
		os.Exit(1)
	}
}

// newApp is the command line: every command, its flags and its error
// handling.
func newApp() *cli.App {
	app := &cli.App{
		Name:  "pg2iceberg",
		Usage: "stream a PostgreSQL publication into Apache Iceberg tables",
		Description: `Example:
   pg2iceberg run --source postgres://app@localhost/shop --publication shop_pub --warehouse ./warehouse
   pg2iceberg status --source postgres://app@localhost/shop --publication shop_pub --warehouse ./warehouse`,
		Flags: []cli.Flag{flagDebug},
		Commands: []*cli.Command{
			serveCommand(), repairCommand(), runCommand(), setupCommand(), backfillCommand(), statusCommand(), maintainCommand(), inspectCommand(),
			snapshotsCommand(), readCommand(), diffCommand(), tagCommand(), branchCommand(), rollbackCommand(), configCommand(),
		},
	}
	commandFlags(app)
	scrubActions(app)
	return app
}

// signalContext is c's context, done at SIGINT or SIGTERM.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

func newLogger(c *cli.Context) *slog.Logger {
	level := slog.LevelInfo
	if debugLevel(c) {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(logOutput(), &slog.HandlerOptions{Level: level, ReplaceAttr: scrubAttr(scrubber(c))}))
}

// loadOverrides reads the --config file's type mapping rules (nil without).
func loadOverrides(c *cli.Context) (*mapping.Overrides, error) {
	path := c.String(flagConfig.Name)
	if path == "" {
		return nil, nil
	}
	o, err := mapping.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	return o, checkTableProperties(o)
}

// checkTableProperties refuses the configuration's table properties that
// the bridge cannot use, each at its entry's line: the file's own settings
// are checked at start, while properties set later by another writer are
// only warned about (see parquetx.OptionsFromProperties). Partition
// fields are checked for their syntax here, against the table's columns
// when it is opened.
func checkTableProperties(o *mapping.Overrides) error {
	e := &mapping.ConfigError{File: o.File}
	for i, p := range o.Tables {
		_, problems := parquetx.OptionsFromProperties(p.Properties)
		for _, prob := range problems {
			e.Add(p.Line, "tables entry %d: properties: %s", i+1, strings.TrimSuffix(prob.Error(), "; using the default"))
		}
		for _, f := range p.Partition {
			if _, _, err := iceberg.ParsePartitionField(f); err != nil {
				e.Add(p.Line, "tables entry %d: partition: %s", i+1, err)
			}
		}
		for _, f := range p.ChangelogPartition {
			if _, _, err := iceberg.ParsePartitionField(f); err != nil {
				e.Add(p.Line, "tables entry %d: changelog_partition: %s", i+1, err)
			}
		}
	}
	return e.Err()
}

func catalogConfig(c *cli.Context) iceberg.CatalogConfig {
	return iceberg.CatalogConfig{
		Warehouse:   c.String(flagWarehouse.Name),
		Catalog:     c.String(flagCatalog.Name),
		S3Endpoint:  c.String(flagS3Endpoint.Name),
		S3Region:    c.String(flagS3Region.Name),
		S3PathStyle: c.Bool(flagS3PathStyle.Name),
		S3Timeout:   c.Duration(flagS3Timeout.Name),
		REST:        restConfig(c),
	}
}

// restConfig is the REST catalog client's configuration from the flags and
// the environment (its secrets).
func restConfig(c *cli.Context) iceberg.RESTConfig {
	return iceberg.RESTConfig{
		ClientID:           c.String(flagRESTClientID.Name),
		ClientSecret:       os.Getenv(envRESTClientSecret),
		ClientSecretFile:   c.String(flagRESTClientSecretFile.Name),
		OAuthURI:           c.String(flagRESTOAuthURI.Name),
		Scope:              c.String(flagRESTScope.Name),
		Token:              os.Getenv(envRESTToken),
		TokenFile:          c.String(flagRESTTokenFile.Name),
		SigV4:              c.Bool(flagRESTSigV4.Name),
		SigV4Region:        c.String(flagRESTSigV4Region.Name),
		SigV4Service:       c.String(flagRESTSigV4Service.Name),
		CAFile:             c.String(flagRESTCAFile.Name),
		InsecureSkipVerify: c.Bool(flagRESTInsecure.Name),
		Headers:            c.StringSlice(flagRESTHeader.Name),
		Warehouse:          c.String(flagRESTWarehouse.Name),
		Prefix:             c.String(flagRESTPrefix.Name),
	}
}

// slotName is --slot, checked, or the slot derived from --publication.
func slotName(c *cli.Context) (string, error) {
	if s := c.String(flagSlot.Name); s != "" {
		return s, replication.ValidateSlotName(s)
	}
	return replication.SlotName(c.String(flagPublication.Name)), nil
}

// sourceConfig is the part of bridge.Config that every command reading the
// source shares: where the source, the slot and the warehouse are, and
// the log. It reads no rules (status needs none; see withRules).
func sourceConfig(c *cli.Context, log *slog.Logger) (bridge.Config, error) {
	slot, err := slotName(c)
	if err != nil {
		return bridge.Config{}, err
	}
	return bridge.Config{
		Source:      c.String(flagSource.Name),
		Publication: c.String(flagPublication.Name),
		Slot:        slot,
		Catalog:     catalogConfig(c),
		Terminal:    stderrTerminal,
		Log:         log,
	}, nil
}

// runConfig is bridge.Config for run: sourceConfig with the rules, the
// batch limits, the copy, the stale-table policy and the servers.
func runConfig(c *cli.Context, rules *mapping.Overrides, log *slog.Logger) (bridge.Config, error) {
	cfg, err := sourceConfig(c, log)
	if err != nil {
		return cfg, err
	}
	cfg.Rules = rules
	cfg.NoChangelog = c.Bool(flagNoChangelog.Name)
	cfg.ConsistentTag = c.Bool(flagConsistentTag.Name)
	cfg.FlushRows, cfg.FlushBytes, cfg.FlushInterval = c.Int(flagFlushRows.Name), c.Int64(flagFlushBytes.Name), c.Duration(flagFlushInterval.Name)
	cfg.SpoolDir = c.String(flagSpoolDir.Name)
	if cfg.ReceiveTimeout = c.Duration(flagReceiveTimeout.Name); cfg.ReceiveTimeout < 2*time.Second {
		return cfg, fmt.Errorf("--receive-timeout %s is too short: give at least 2s (the default is %s; the server answers a keepalive request within it)", cfg.ReceiveTimeout, replication.DefaultReceiveTimeout)
	}
	if cfg.KeyIndex, err = keyIndexFlags(c); err != nil {
		return cfg, err
	}
	if cfg.Retention, err = retentionFlags(c); err != nil {
		return cfg, err
	}
	cfg.CopyWorkers = c.Int(flagCopyWorkers.Name)
	cfg.MetricsAddr = c.String(flagMetricsAddr.Name)
	if cfg.SkipCopy, err = oneOf(c, flagBackfill, "copy", "skip"); err != nil {
		return cfg, err
	}
	if cfg.RecopyStale, err = oneOf(c, flagOnStaleTable, "fail", "recopy"); err != nil {
		return cfg, err
	}
	if cfg.RecopySlotLost, err = oneOf(c, flagOnSlotLost, "fail", "recopy"); err != nil {
		return cfg, err
	}
	if addr := c.String(flagServeCatalog.Name); addr != "" {
		cs, err := catalogServerConfig(c, addr, true, log)
		if err != nil {
			return cfg, err
		}
		cfg.CatalogServer = &cs
	}
	return cfg, nil
}

// oneOf reads a flag that takes one of two words: false for the first,
// true for the second.
func oneOf(c *cli.Context, f *cli.StringFlag, first, second string) (bool, error) {
	switch v := c.String(f.Name); v {
	case first:
		return false, nil
	case second:
		return true, nil
	default:
		return false, fmt.Errorf("--%s %q: use %s or %s", f.Name, v, first, second)
	}
}

// catalogServerConfig is the REST catalog server's configuration from the
// flags, serving at listen (explicit: named by the operator).
func catalogServerConfig(c *cli.Context, listen string, explicit bool, log *slog.Logger) (bridge.CatalogServerConfig, error) {
	token, err := secret(c.String(flagCatalogToken.Name), "--catalog-token", c.String(flagCatalogTokenFile.Name), "--catalog-token-file")
	if err != nil {
		return bridge.CatalogServerConfig{}, err
	}
	clientSecret, err := secret(os.Getenv(envCatalogClientSecret), envCatalogClientSecret,
		c.String(flagCatalogClientSecretFile.Name), "--catalog-client-secret-file")
	if err != nil {
		return bridge.CatalogServerConfig{}, err
	}
	return bridge.CatalogServerConfig{
		Catalog:      catalogConfig(c),
		Listen:       listen,
		Explicit:     explicit,
		Token:        token,
		ClientID:     c.String(flagCatalogClientID.Name),
		ClientSecret: clientSecret,
		Mount:        c.String(flagCatalogMount.Name),
		Prefix:       c.String(flagCatalogPrefix.Name),
		TLSCert:      c.String(flagCatalogTLSCert.Name),
		TLSKey:       c.String(flagCatalogTLSKey.Name),
		Vend:         c.Bool(flagVendS3Credentials.Name),
		Log:          log,
	}, nil
}

// secret is value (named what), or the trimmed content of file (named
// fileWhat), or empty; both given is an error.
func secret(value, what, file, fileWhat string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("give %s or %s, not both", what, fileWhat)
	case file == "":
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", fileWhat, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s %s is empty", fileWhat, file)
	}
	return v, nil
}

// keyIndexFlags reads --key-index-memory and --key-index-dir.
func keyIndexFlags(c *cli.Context) (iceberg.KeyIndexConfig, error) {
	cfg := iceberg.KeyIndexConfig{Dir: c.String(flagKeyIndexDir.Name)}
	if v := strings.TrimSpace(c.String(flagKeyIndexMemory.Name)); v != "0" {
		n, err := parseSize("--key-index-memory", v)
		if err != nil {
			return cfg, err
		}
		if n <= 0 {
			return cfg, fmt.Errorf("--key-index-memory %q: write a size like 256MiB, or 0 to keep the key index in memory", v)
		}
		cfg.Memory = n
	}
	return cfg, nil
}
