package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

var (
	flagListen = &cli.StringFlag{Name: "listen", EnvVars: env("listen"), Value: "127.0.0.1:8181",
		Usage: "address of the REST catalog; port 0 picks a free one. Without a token, a non-loopback address is served only when named here (with a warning)"}
	flagServeCatalog = &cli.StringFlag{Name: "serve-catalog", EnvVars: env("serve-catalog"),
		Usage: "also serve the warehouse as a read-only Iceberg REST catalog at this address, e.g. 127.0.0.1:8181"}
	flagCatalogToken = &cli.StringFlag{Name: "catalog-token", EnvVars: env("catalog-token"),
		Usage: "require Authorization: Bearer <token> on every catalog request (prefer --catalog-token-file or the environment: arguments show in the process list)"}
	flagCatalogTokenFile = &cli.StringFlag{Name: "catalog-token-file", EnvVars: env("catalog-token-file"),
		Usage: "read the catalog token from this file"}
	flagVendS3Credentials = &cli.BoolFlag{Name: "vend-s3-credentials", EnvVars: env("vend-s3-credentials"),
		Usage: "hand the server's own S3 keys (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) to every client with each table; needs a catalog token. Off: clients use their own credentials"}
)

// catalogServerConfig says what startCatalogServer serves, where and to
// whom.
type catalogServerConfig struct {
	// Catalog is the warehouse and catalog to serve.
	Catalog iceberg.CatalogConfig
	// Listen is host:port; port 0 picks a free port.
	Listen string
	// Explicit reports that the operator named Listen, which allows a
	// non-loopback address without a token (see rest.CheckListen).
	Explicit bool
	// Token, when set, is required as a bearer token.
	Token string
	// Vend hands the server's S3 keys to clients.
	Vend bool
	// Log receives the server's messages; never the token.
	Log *slog.Logger
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the warehouse as a read-only Iceberg REST catalog for Spark, Trino, pyiceberg, DuckDB",
		Description: `Example:
   pg2iceberg serve --warehouse ./warehouse --listen 127.0.0.1:8181
   then point an engine at http://127.0.0.1:8181 (see docs/querying.md)`,
		Flags: []cli.Flag{flagWarehouse, flagCatalog, flagS3Endpoint, flagS3Region, flagS3PathStye,
			flagListen, flagCatalogToken, flagCatalogTokenFile, flagVendS3Credentials},
		Action: serveCmd,
	}
}

func serveCmd(c *cli.Context) error {
	log := newLogger(c)
	ctx, cancel := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cfg, err := catalogServerFlags(c, c.String(flagListen.Name), c.IsSet(flagListen.Name), log)
	if err != nil {
		return err
	}
	// serve reads a catalog the bridge made; it must not create an empty
	// one at a mistyped path.
	if p := cfg.Catalog.SQLitePath(); p != "" {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("no catalog at %s (%w): start pg2iceberg run first, or pass --warehouse/--catalog of an existing warehouse", p, err)
		}
	}
	stop, err := startCatalogServer(ctx, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	log.Info("catalog server stopped")
	return nil
}

// serveCatalogForRun starts the catalog server that run --serve-catalog
// asks for; without the flag it starts nothing. Call stop before exiting.
func serveCatalogForRun(ctx context.Context, c *cli.Context, log *slog.Logger) (stop func(), err error) {
	addr := c.String(flagServeCatalog.Name)
	if addr == "" {
		return func() {}, nil
	}
	cfg, err := catalogServerFlags(c, addr, true, log)
	if err != nil {
		return nil, err
	}
	return startCatalogServer(ctx, cfg)
}

// catalogServerFlags builds the server's configuration from the flags.
func catalogServerFlags(c *cli.Context, listen string, explicit bool, log *slog.Logger) (catalogServerConfig, error) {
	token, file := c.String(flagCatalogToken.Name), c.String(flagCatalogTokenFile.Name)
	switch {
	case token != "" && file != "":
		return catalogServerConfig{}, errors.New("give --catalog-token or --catalog-token-file, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return catalogServerConfig{}, fmt.Errorf("read --catalog-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return catalogServerConfig{}, fmt.Errorf("--catalog-token-file %s is empty", file)
		}
	}
	return catalogServerConfig{
		Catalog:  catalogConfig(c),
		Listen:   listen,
		Explicit: explicit,
		Token:    token,
		Vend:     c.Bool(flagVendS3Credentials.Name),
		Log:      log,
	}, nil
}

// startCatalogServer serves cfg.Catalog as a read-only Iceberg REST catalog
// until stop is called. It returns once the address is bound, so a client
// may connect right away.
func startCatalogServer(ctx context.Context, cfg catalogServerConfig) (stop func(), err error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	warning, err := rest.CheckListen(cfg.Listen, cfg.Token != "", cfg.Explicit)
	if err != nil {
		return nil, err
	}
	var creds map[string]string
	if cfg.Vend {
		if cfg.Token == "" {
			return nil, errors.New("--vend-s3-credentials hands out S3 keys: it needs --catalog-token or --catalog-token-file")
		}
		if creds, err = rest.VendedCredentials(os.Getenv); err != nil {
			return nil, err
		}
	}
	wh, err := cfg.Catalog.WarehouseURI()
	if err != nil {
		return nil, err
	}
	cat, err := iceberg.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return nil, err
	}
	h, err := rest.New(cat, rest.Config{
		Warehouse:   wh,
		Token:       cfg.Token,
		TableConfig: rest.StorageConfig(cfg.Catalog),
		Credentials: creds,
	}, log)
	if err != nil {
		closeCatalog(cat, log)
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		closeCatalog(cat, log)
		return nil, fmt.Errorf("catalog server: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("catalog server failed", "error", err)
		}
	}()
	addr := ln.Addr().String()
	log.Info("catalog server listening", "addr", addr, "uri", "http://"+addr, "prefix", rest.DefaultName,
		"warehouse", wh, "token_required", cfg.Token != "", "vends_credentials", cfg.Vend)
	if warning != "" {
		log.Warn(warning)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("catalog server did not stop cleanly", "error", err)
		}
		<-done
		closeCatalog(cat, log)
	}, nil
}
