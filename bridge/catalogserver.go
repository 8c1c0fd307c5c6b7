package bridge

import (
	"context"
	"crypto/tls"
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
	// ClientID and ClientSecret, when set, are traded for tokens at
	// /v1/oauth/tokens (OAuth2 client credentials, read-only scope).
	ClientID     string
	ClientSecret string
	// Mount is the path the API is served under (default the root), and
	// Prefix the catalog prefix /v1/config advertises (default pg2iceberg).
	Mount  string
	Prefix string
	// TLSCert and TLSKey, both set, serve HTTPS with this PEM certificate
	// (chain) and key.
	TLSCert, TLSKey string
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
	warning, err := rest.CheckListen(cfg.Listen, cfg.Token != "" || cfg.ClientID != "", cfg.Explicit)
	if err != nil {
		return nil, err
	}
	var creds map[string]string
	if cfg.Vend {
		if cfg.Token == "" && cfg.ClientID == "" {
			return nil, errors.New("--vend-s3-credentials hands out S3 keys: it needs --catalog-token, --catalog-token-file or --catalog-client-id")
		}
		if creds, err = rest.VendedCredentials(os.Getenv); err != nil {
			return nil, err
		}
	}
	wh, err := cfg.Catalog.WarehouseURI()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := serverTLS(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, err
	}
	cat, err := iceberg.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return nil, err
	}
	h, err := rest.New(cat, rest.Config{
		Warehouse:    wh,
		Token:        cfg.Token,
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Mount:        cfg.Mount,
		Prefix:       cfg.Prefix,
		TableConfig:  rest.StorageConfig(cfg.Catalog),
		Credentials:  creds,
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
	scheme := "http://"
	if tlsCfg != nil {
		ln, scheme = tls.NewListener(ln, tlsCfg), "https://"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := serveHTTP(g, srv, ln, "catalog server failed", log)
	addr := ln.Addr().String()
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = rest.DefaultName
	}
	log.Info("catalog server listening", "addr", addr, "uri", scheme+addr+cfg.Mount, "prefix", prefix,
		"warehouse", wh, "token_required", cfg.Token != "" || cfg.ClientID != "", "oauth2", cfg.ClientID != "",
		"vends_credentials", cfg.Vend)
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

// serverTLS is the TLS configuration of a certificate and key file, or nil
// for neither.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("serving the catalog over TLS needs both --catalog-tls-cert and --catalog-tls-key")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load --catalog-tls-cert and --catalog-tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
