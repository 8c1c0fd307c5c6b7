package iceberg

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses
	_ "github.com/jackc/pgx/v5/stdlib"             // the "pgx" driver for a SQL catalog in Postgres
	_ "modernc.org/sqlite"                         // the "sqlite" driver for the embedded catalog

	"github.com/pg2iceberg/pg2iceberg/connstr"
)

// CatalogConfig says where the tables live.
type CatalogConfig struct {
	// Warehouse is a local directory or s3://bucket/prefix.
	Warehouse string
	// Catalog is empty (the embedded SQLite catalog: <warehouse>/catalog.db
	// for a local warehouse, ./pg2iceberg-catalog.db for S3), a path to a
	// SQLite file, a postgres:// URL (SQL catalog in Postgres) or an
	// http(s):// REST catalog URI.
	Catalog string
	// Name is the catalog's name (default "pg2iceberg").
	Name string
	// S3Endpoint, S3Region and S3PathStyle configure S3-compatible storage.
	// Credentials come from the AWS default chain (environment, profile).
	S3Endpoint  string
	S3Region    string
	S3PathStyle bool
	// S3Timeout is how long an S3 connection may go without a byte either
	// way before its request is abandoned and retried (0: DefaultS3Timeout).
	S3Timeout time.Duration
	// S3AccessKeyID and S3SecretAccessKey are static keys for a program
	// that opens several S3 stores at once (the integration tests): set,
	// they are used instead of the default chain. The command line has no
	// flag for them; it takes keys from the environment or a profile.
	S3AccessKeyID, S3SecretAccessKey string
	// REST authenticates to an http(s):// catalog; unused otherwise.
	REST RESTConfig
}

// keywordValue matches a PostgreSQL keyword/value connection string.
var keywordValue = regexp.MustCompile(`(^|\s)(host|hostaddr|port|dbname|user|password|sslmode)\s*=`)

// Validate reports every problem with the configuration.
func (c CatalogConfig) Validate() error {
	var errs []error
	if c.Warehouse == "" {
		errs = append(errs, errors.New("warehouse is empty: give a directory or s3://bucket/prefix"))
	}
	if strings.Contains(c.Warehouse, "://") && !strings.HasPrefix(c.Warehouse, "s3://") && !strings.HasPrefix(c.Warehouse, "file://") {
		errs = append(errs, fmt.Errorf("warehouse %q: only local directories and s3://bucket/prefix are supported", c.Warehouse))
	}
	if c.S3Timeout < 0 {
		errs = append(errs, fmt.Errorf("S3 timeout %s: want a positive duration such as 60s", c.S3Timeout))
	}
	errs = append(errs, c.REST.validate(c.IsREST())...)
	switch {
	case !strings.Contains(c.Catalog, "://"):
		if keywordValue.MatchString(c.Catalog) {
			errs = append(errs, errors.New("catalog: a keyword/value connection string (host=... dbname=...) would be taken for a SQLite file name: write the SQL catalog as postgres://user@host:5432/db"))
		}
	case !connstr.Readable(c.Catalog):
		errs = append(errs, errors.New("catalog: the URL does not parse unambiguously: percent-encode @, / and : in its password (%40, %2F, %3A)"))
	default:
		switch scheme, _, _ := strings.Cut(c.Catalog, "://"); scheme {
		case "http", "https", "postgres", "postgresql":
		default:
			errs = append(errs, fmt.Errorf("catalog %s: use a SQLite file path, postgres://... or http(s)://... (a REST catalog)", connstr.Redact(c.Catalog)))
		}
	}
	return errors.Join(errs...)
}

// IsREST reports whether the catalog is a REST catalog.
func (c CatalogConfig) IsREST() bool {
	return strings.HasPrefix(c.Catalog, "http://") || strings.HasPrefix(c.Catalog, "https://")
}

// IsS3 reports whether the warehouse is on S3.
func (c CatalogConfig) IsS3() bool { return strings.HasPrefix(c.Warehouse, "s3://") }

// WarehouseURI returns the warehouse as a URI (file:///abs or s3://...).
func (c CatalogConfig) WarehouseURI() (string, error) {
	if strings.Contains(c.Warehouse, "://") {
		return strings.TrimSuffix(c.Warehouse, "/"), nil
	}
	abs, err := filepath.Abs(c.Warehouse)
	if err != nil {
		return "", fmt.Errorf("warehouse path %q: %w", c.Warehouse, err)
	}
	return "file://" + abs, nil
}

// SQLitePath returns the embedded catalog's file, or "" when the catalog is
// not the embedded one.
func (c CatalogConfig) SQLitePath() string {
	switch {
	case c.Catalog == "" && c.IsS3():
		return "pg2iceberg-catalog.db"
	case c.Catalog == "":
		return filepath.Join(strings.TrimPrefix(c.Warehouse, "file://"), "catalog.db")
	case strings.Contains(c.Catalog, "://"):
		return ""
	default:
		return c.Catalog
	}
}

// IOProps returns the FileIO properties for the warehouse.
func (c CatalogConfig) IOProps() icego.Properties {
	p := icego.Properties{}
	if c.S3Endpoint != "" {
		p[icebergio.S3EndpointURL] = c.S3Endpoint
	}
	if c.S3Region != "" {
		p[icebergio.S3Region] = c.S3Region
	}
	if c.S3AccessKeyID != "" {
		p[icebergio.S3AccessKeyID], p[icebergio.S3SecretAccessKey] = c.S3AccessKeyID, c.S3SecretAccessKey
	}
	if c.IsS3() {
		// Said either way: iceberg-go picks path style only with an
		// endpoint in its own properties, not one from AWS_ENDPOINT_URL_S3.
		p[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!c.S3PathStyle)
		if c.S3Timeout > 0 {
			p[propS3Timeout] = c.S3Timeout.String()
		}
	}
	return p
}

// OpenCatalog opens (and for SQL catalogs initialises) the catalog.
func OpenCatalog(ctx context.Context, c CatalogConfig) (catalog.Catalog, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	name := c.Name
	if name == "" {
		name = "pg2iceberg"
	}
	wh, err := c.WarehouseURI()
	if err != nil {
		return nil, err
	}
	props := c.IOProps()
	props["warehouse"] = wh
	if !c.IsS3() {
		if err := os.MkdirAll(strings.TrimPrefix(wh, "file://"), 0o755); err != nil {
			return nil, fmt.Errorf("create warehouse directory: %w", err)
		}
	}
	switch {
	case c.IsREST():
		rc, err := c.REST.Resolve()
		if err != nil {
			return nil, err
		}
		opts, err := rc.options(wh, c.S3Region)
		if err != nil {
			return nil, err
		}
		opts = append(opts, rest.WithAdditionalProps(props))
		cat, err := rest.NewCatalog(ctx, name, c.Catalog, opts...)
		if err != nil {
			scrub := connstr.NewScrubber(c.Catalog).Add(rc.Secrets()...)
			return nil, scrub.Wrap(fmt.Errorf("open REST catalog at %s: %w", connstr.Redact(c.Catalog), err))
		}
		return cat, nil
	default:
		db, dialect, err := openCatalogDB(c)
		if err != nil {
			return nil, err
		}
		cat, err := sqlcat.NewCatalog(name, db, dialect, props)
		if err != nil {
			_ = db.Close()
			return nil, connstr.ScrubError(fmt.Errorf("open %s: %w", c.describeSQL(), err), c.Catalog)
		}
		return &sqlCatalog{Catalog: cat, db: db, sqlite: dialect == sqlcat.SQLite, what: c.describeSQL()}, nil
	}
}

// sqlCatalog is a SQL catalog with the database it owns, so that it can be
// closed (see CloseCatalog).
type sqlCatalog struct {
	*sqlcat.Catalog
	db     *dbsql.DB
	sqlite bool
	what   string // for messages
}

// CloseCatalog closes a catalog OpenCatalog opened. The embedded SQLite
// catalog (in WAL mode) is checkpointed first: every committed change is
// moved from catalog.db-wal into catalog.db and the WAL is truncated, so a
// copy of catalog.db alone holds the latest metadata. Closing a catalog
// without a database (REST) does nothing.
func CloseCatalog(cat catalog.Catalog) error {
	c, ok := cat.(*sqlCatalog)
	if !ok {
		return nil
	}
	var errs []error
	if c.sqlite {
		// TRUNCATE waits for readers (busy_timeout) and leaves an empty
		// WAL even when another process (pg2iceberg serve) keeps the file
		// open; closing the last connection then removes it.
		var busy, logFrames, done int
		err := c.db.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("checkpoint %s: %w", c.what, err))
		case busy != 0:
			errs = append(errs, fmt.Errorf("checkpoint %s: another connection kept it busy; catalog.db-wal still holds changes", c.what))
		}
	}
	if err := c.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", c.what, err))
	}
	return errors.Join(errs...)
}

// openCatalogDB opens the database of a SQL catalog: Postgres for a
// postgres:// catalog, else the SQLite file (created if missing).
func openCatalogDB(c CatalogConfig) (*dbsql.DB, sqlcat.SupportedDialect, error) {
	if strings.HasPrefix(c.Catalog, "postgres://") || strings.HasPrefix(c.Catalog, "postgresql://") {
		db, err := dbsql.Open("pgx", c.Catalog)
		if err != nil {
			return nil, "", connstr.ScrubError(fmt.Errorf("open %s: %w", c.describeSQL(), err), c.Catalog)
		}
		return db, sqlcat.Postgres, nil
	}
	path := c.SQLitePath()
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("create catalog directory: %w", err)
		}
	}
	db, err := dbsql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", c.describeSQL(), err)
	}
	return db, sqlcat.SQLite, nil
}

// describeSQL names a SQL catalog for messages, without its password.
func (c CatalogConfig) describeSQL() string {
	if p := c.SQLitePath(); p != "" {
		return "SQLite catalog " + p
	}
	return "SQL catalog at " + connstr.Redact(c.Catalog)
}
