package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

// CatalogServerConfig says what the REST catalog server serves, where and
// to whom.
type CatalogServerConfig struct {
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

// ServeCatalog serves the warehouse of an existing catalog as a read-only
// Iceberg REST catalog until ctx is done (pg2iceberg serve).
func ServeCatalog(ctx context.Context, cfg CatalogServerConfig) error {
	// serve reads a catalog the bridge made; it must not create an empty
	// one at a mistyped path.
	if p := cfg.Catalog.SQLitePath(); p != "" {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("no catalog at %s (%w): start pg2iceberg run first, or pass --warehouse/--catalog of an existing warehouse", p, err)
		}
	}
	var g errgroup.Group
	stop, err := startCatalogServer(ctx, &g, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	logOr(cfg.Log).Info("catalog server stopped")
	return g.Wait()
}

// startCatalogServer serves cfg.Catalog as a read-only Iceberg REST catalog
// in a goroutine of g until stop is called. It returns once the address is
// bound, so a client may connect right away.
func startCatalogServer(ctx context.Context, g *errgroup.Group, cfg CatalogServerConfig) (stop func(), err error) {
	log := logOr(cfg.Log)
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
	done := serveHTTP(g, srv, ln, "catalog server failed", log)
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
