package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/replication"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// Every flag is defined once, here, and read by its Name; a command that
// words one differently takes a copy (see backfillWorkers).

func env(name string) []string {
	return []string{"PG2ICEBERG_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
}

// The source and the warehouse: every command that reads them.
var (
	flagSource = &cli.StringFlag{Name: "source", EnvVars: env("source"), Required: true,
		Usage: "PostgreSQL URL of the source database, e.g. postgres://app@db:5432/shop (put the password in PGPASSWORD or ~/.pgpass, not here)"}
	flagPublication = &cli.StringFlag{Name: "publication", EnvVars: env("publication"), Required: true,
		Usage: "publication to stream; it must exist, e.g. CREATE PUBLICATION shop_pub FOR TABLE orders, customers"}
	flagSlot = &cli.StringFlag{Name: "slot", EnvVars: env("slot"),
		Usage: "replication slot; created if missing (default pg2iceberg_<publication>)"}
	flagWarehouse = &cli.StringFlag{Name: "warehouse", EnvVars: env("warehouse"), Value: "./warehouse",
		Usage: "where the tables live: a directory, or s3://bucket/prefix"}
	flagCatalog = &cli.StringFlag{Name: "catalog", EnvVars: env("catalog"),
		Usage: "catalog: empty for the embedded SQLite catalog (<warehouse>/catalog.db), a SQLite file path, postgres://... for a SQL catalog in Postgres, or http(s)://... for a REST catalog"}
	flagS3Endpoint = &cli.StringFlag{Name: "s3-endpoint", EnvVars: env("s3-endpoint"),
		Usage: "S3-compatible endpoint, e.g. http://127.0.0.1:7070 (credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the AWS profile)"}
	flagConfig = &cli.StringFlag{Name: "config", EnvVars: env("config"),
		Usage: "a YAML file of settings (any flag, e.g. flush_interval: 5s), type mapping rules and per-table policies; check it with pg2iceberg config check FILE (see docs/configuration.md)"}
	flagS3Region  = &cli.StringFlag{Name: "s3-region", EnvVars: env("s3-region"), Value: "us-east-1", Usage: "S3 region"}
	flagS3Timeout = &cli.DurationFlag{Name: "s3-timeout", EnvVars: env("s3-timeout"), Value: iceberg.DefaultS3Timeout,
		Usage: "abandon (and retry) an S3 request whose connection moves no byte for this long: a half-open connection"}
	flagS3PathStyle = &cli.BoolFlag{Name: "s3-path-style", EnvVars: env("s3-path-style"), Usage: "address buckets as host/bucket/key, not bucket.host/key (MinIO, versitygw)"}

	flagDebug = &cli.BoolFlag{Name: "debug", EnvVars: env("debug"), Usage: "log at debug level"}
)

// The REST catalog client's, for --catalog http(s)://... Secrets come only
// from the environment or a file: arguments show in the process list.
var (
	flagRESTClientID = &cli.StringFlag{Name: "rest-client-id", EnvVars: env("rest-client-id"),
		Usage: "OAuth2 client credentials for the REST catalog: the client id; the secret comes from PG2ICEBERG_REST_CLIENT_SECRET or --rest-client-secret-file"}
	flagRESTClientSecretFile = &cli.StringFlag{Name: "rest-client-secret-file", EnvVars: env("rest-client-secret-file"),
		Usage: "read the OAuth2 client secret from this file"}
	flagRESTOAuthURI = &cli.StringFlag{Name: "rest-oauth-uri", EnvVars: env("rest-oauth-uri"),
		Usage: "the OAuth2 token endpoint (default <catalog>/v1/oauth/tokens)"}
	flagRESTScope = &cli.StringFlag{Name: "rest-scope", EnvVars: env("rest-scope"),
		Usage: "the OAuth2 scope to ask for (default catalog)"}
	flagRESTTokenFile = &cli.StringFlag{Name: "rest-token-file", EnvVars: env("rest-token-file"),
		Usage: "send the bearer token in this file to the REST catalog (or set PG2ICEBERG_REST_TOKEN)"}
	flagRESTSigV4 = &cli.BoolFlag{Name: "rest-sigv4", EnvVars: env("rest-sigv4"),
		Usage: "sign REST catalog requests with AWS SigV4 (credentials from the AWS default chain): Glue, S3 Tables"}
	flagRESTSigV4Region = &cli.StringFlag{Name: "rest-sigv4-region", EnvVars: env("rest-sigv4-region"),
		Usage: "the region SigV4 signs for (default --s3-region)"}
	flagRESTSigV4Service = &cli.StringFlag{Name: "rest-sigv4-service", EnvVars: env("rest-sigv4-service"),
		Usage: "the service SigV4 signs for: glue, s3tables (default execute-api)"}
	flagRESTCAFile = &cli.StringFlag{Name: "rest-ca-file", EnvVars: env("rest-ca-file"),
		Usage: "trust only the certificate authorities in this PEM file for the REST catalog"}
	flagRESTInsecure = &cli.BoolFlag{Name: "rest-insecure-skip-verify", EnvVars: env("rest-insecure-skip-verify"),
		Usage: "accept any TLS certificate from the REST catalog (tests only)"}
	flagRESTHeader = &cli.StringSliceFlag{Name: "rest-header", EnvVars: env("rest-header"),
		Usage: "send this header with every REST catalog request, as \"Name: value\"; repeat for more"}
	flagRESTWarehouse = &cli.StringFlag{Name: "rest-warehouse", EnvVars: env("rest-warehouse"),
		Usage: "the warehouse to ask the REST catalog for (a catalog name or ARN on hosted catalogs; default --warehouse)"}
	flagRESTPrefix = &cli.StringFlag{Name: "rest-prefix", EnvVars: env("rest-prefix"),
		Usage: "the REST catalog's path prefix after /v1/ (default: what its /v1/config says)"}

	restFlags = []cli.Flag{flagRESTClientID, flagRESTClientSecretFile, flagRESTOAuthURI, flagRESTScope, flagRESTTokenFile,
		flagRESTSigV4, flagRESTSigV4Region, flagRESTSigV4Service, flagRESTCAFile, flagRESTInsecure, flagRESTHeader,
		flagRESTWarehouse, flagRESTPrefix}
)

// The environment variables of the REST catalog client's secrets.
const (
	envRESTClientSecret = "PG2ICEBERG_REST_CLIENT_SECRET"
	envRESTToken        = "PG2ICEBERG_REST_TOKEN"
)

// run's.
var (
	flagFlushInterval  = &cli.DurationFlag{Name: "flush-interval", EnvVars: env("flush-interval"), Value: iceberg.DefaultFlushInterval, Usage: "commit at least this often while changes are pending, e.g. 5s"}
	flagFlushRows      = &cli.IntFlag{Name: "flush-rows", EnvVars: env("flush-rows"), Value: iceberg.DefaultFlushRows, Usage: "commit once this many changes are pending"}
	flagFlushBytes     = &cli.Int64Flag{Name: "flush-bytes", EnvVars: env("flush-bytes"), Value: iceberg.DefaultFlushBytes, Usage: "commit once this many Parquet bytes are pending"}
	flagMemoryLimit    = &cli.StringFlag{Name: "memory-limit", EnvVars: env("memory-limit"), Value: "384MiB", Usage: "soft memory limit of the Go heap, e.g. 384MiB, 2GiB or 2GB (KB, MB, GB: powers of 1000; KiB, MiB, GiB: powers of 1024); the process peaks somewhat above it"}
	flagConsistentTag  = &cli.BoolFlag{Name: "consistent-tag", EnvVars: env("consistent-tag"), Usage: "after each flush, move a tag named consistent on every table to the newest complete cut (one more commit per changed table; see docs/querying.md)"}
	flagNoChangelog    = &cli.BoolFlag{Name: "no-changelog", EnvVars: env("no-changelog"), Usage: "do not write <table>__changelog tables"}
	flagSpoolDir       = &cli.StringFlag{Name: "spool-dir", EnvVars: env("spool-dir"), Usage: "directory for large in-progress transactions (default: the system temp dir)"}
	flagReceiveTimeout = &cli.DurationFlag{Name: "receive-timeout", EnvVars: env("receive-timeout"), Value: replication.DefaultReceiveTimeout,
		Usage: "take the replication connection as lost (and reconnect) when the server sends nothing this long, not even the reply to a keepalive the bridge asks for halfway: a half-open connection"}
	flagBackfill     = &cli.StringFlag{Name: "backfill", EnvVars: env("backfill"), Value: "copy", Usage: "copy: copy existing rows of every published table first; skip: only stream changes from now on"}
	flagCopyWorkers  = &cli.IntFlag{Name: "backfill-workers", EnvVars: env("backfill-workers"), Value: runtime.NumCPU(), Usage: "connections copying a table in parallel (ctid block ranges, one snapshot)"}
	flagMetricsAddr  = &cli.StringFlag{Name: "metrics-addr", EnvVars: env("metrics-addr"), Usage: "serve Prometheus metrics at /metrics, progress as JSON at /status and a health check at /healthz, e.g. 127.0.0.1:9187"}
	flagOnStaleTable = &cli.StringFlag{Name: "on-stale-table", EnvVars: env("on-stale-table"), Value: "fail",
		Usage: "a table whose catalog entry is behind commits the slot confirmed (a catalog restored from an older copy): fail (say what to run), or recopy (copy the table again; its changelog then lacks the changes in between)"}
	flagOnSlotLost = &cli.StringFlag{Name: "on-slot-lost", EnvVars: env("on-slot-lost"), Value: "fail",
		Usage: "a slot the server invalidated (wal_status lost: max_slot_wal_keep_size removed WAL it needed): fail (say what to do), or recopy (drop and create the slot, copy every table again; changelogs then lack the changes in between)"}
)

// The REST catalog server's (serve, and run --serve-catalog).
var (
	flagListen = &cli.StringFlag{Name: "listen", EnvVars: env("listen"), Value: "127.0.0.1:8181",
		Usage: "address of the REST catalog; port 0 picks a free one. Without a token, a non-loopback address is served only when named here (with a warning)"}
	flagServeCatalog = &cli.StringFlag{Name: "serve-catalog", EnvVars: env("serve-catalog"),
		Usage: "also serve the warehouse as a read-only Iceberg REST catalog at this address, e.g. 127.0.0.1:8181"}
	flagCatalogToken = &cli.StringFlag{Name: "catalog-token", EnvVars: env("catalog-token"),
		Usage: "require Authorization: Bearer <token> on every catalog request (prefer --catalog-token-file or the environment: arguments show in the process list)"}
	flagCatalogTokenFile = &cli.StringFlag{Name: "catalog-token-file", EnvVars: env("catalog-token-file"),
		Usage: "read the catalog token from this file"}
	flagCatalogClientID = &cli.StringFlag{Name: "catalog-client-id", EnvVars: env("catalog-client-id"),
		Usage: "let clients that speak only OAuth2 trade this client id and its secret (PG2ICEBERG_CATALOG_CLIENT_SECRET or --catalog-client-secret-file) for a read-only token at /v1/oauth/tokens"}
	flagCatalogClientSecretFile = &cli.StringFlag{Name: "catalog-client-secret-file", EnvVars: env("catalog-client-secret-file"),
		Usage: "read the OAuth2 client secret of --catalog-client-id from this file"}
	flagCatalogMount = &cli.StringFlag{Name: "catalog-mount", EnvVars: env("catalog-mount"),
		Usage: "serve the catalog API under this path, e.g. /v1/iceberg (clients then use http://host:port/v1/iceberg as the URI)"}
	flagCatalogPrefix = &cli.StringFlag{Name: "catalog-prefix", EnvVars: env("catalog-prefix"), Value: "pg2iceberg",
		Usage: "the prefix /v1/config hands to clients, which then call /v1/<prefix>/namespaces/..."}
	flagCatalogTLSCert = &cli.StringFlag{Name: "catalog-tls-cert", EnvVars: env("catalog-tls-cert"),
		Usage: "serve the catalog over HTTPS with this PEM certificate (chain); needs --catalog-tls-key"}
	flagCatalogTLSKey = &cli.StringFlag{Name: "catalog-tls-key", EnvVars: env("catalog-tls-key"),
		Usage: "the PEM private key of --catalog-tls-cert"}
	flagVendS3Credentials = &cli.BoolFlag{Name: "vend-s3-credentials", EnvVars: env("vend-s3-credentials"),
		Usage: "hand the server's own S3 keys (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) to every client with each table; needs a catalog token. Off: clients use their own credentials"}
)

// catalogServerFlags are the REST catalog server's options besides the
// address (serve's --listen, run's --serve-catalog).
var catalogServerFlags = []cli.Flag{flagCatalogToken, flagCatalogTokenFile, flagCatalogClientID, flagCatalogClientSecretFile,
	flagCatalogMount, flagCatalogPrefix, flagCatalogTLSCert, flagCatalogTLSKey, flagVendS3Credentials}

// The environment variable of the served catalog's OAuth2 client secret.
const envCatalogClientSecret = "PG2ICEBERG_CATALOG_CLIENT_SECRET"

// backfill's, setup's and repair's.
var (
	flagTable = &cli.StringFlag{Name: "table", Required: true, Usage: "the published table to copy, as schema.table"}

	flagPrint     = &cli.BoolFlag{Name: "print", Usage: "print the SQL instead of running it"}
	flagUninstall = &cli.BoolFlag{Name: "uninstall", Usage: "remove the DDL capture"}
	flagGrantTo   = &cli.StringFlag{Name: "grant-to", Usage: "the role the bridge runs as, when it is not a superuser: granted the right to read the key DDL events are signed with"}

	flagDryRun   = &cli.BoolFlag{Name: "dry-run", Usage: "print what would change, change nothing"}
	flagForce    = &cli.BoolFlag{Name: "force", Usage: "point the catalog at the newest valid metadata file even when it does not descend from the one the catalog points at (a forked history)"}
	flagLocation = &cli.StringFlag{Name: "location", Usage: "the table's location, when it is not <warehouse>/<namespace>.db/<table> and the catalog has no entry (one table only)"}
)

// maintain's, and the retention run shares.
var (
	flagMaintainTable = &cli.StringFlag{Name: "table", Usage: "the one Iceberg table to maintain, as namespace.table (default: every table the bridge writes)"}
	flagOrphanAge     = &cli.DurationFlag{Name: "orphans-older-than", Value: tiering.DefaultOrphanAge,
		Usage: "remove files no metadata references once they are this old, e.g. 72h or 0s (refused under 24h while a bridge writes the warehouse)"}
	flagRetentionAge = &cli.DurationFlag{Name: "retention-max-age", EnvVars: env("retention-max-age"), DefaultText: "the table's",
		Usage: "expire snapshots older than this, e.g. 24h, for tables the --config file gives no retention (each table's history.expire.max-snapshot-age-ms when not given: 1h on tables the bridge creates)"}
	flagRetentionKeep = &cli.IntFlag{Name: "retention-min-snapshots", EnvVars: env("retention-min-snapshots"), DefaultText: "the table's",
		Usage: "always keep the newest this many snapshots, for tables the --config file gives no retention (each table's history.expire.min-snapshots-to-keep when not given: 20 on tables the bridge creates)"}
)

// inspect's.
var (
	flagInspectTable = &cli.StringFlag{Name: "table", Required: true, Usage: "the Iceberg table, as namespace.table, e.g. public.orders or public.orders__changelog"}
)

// storageFlags are the flags of the commands that read the warehouse, and
// sourceFlags of those that read the source too.
var (
	storageFlags = flags([]cli.Flag{flagWarehouse, flagCatalog, flagS3Endpoint, flagS3Region, flagS3PathStyle, flagS3Timeout}, restFlags)
	sourceFlags  = flags([]cli.Flag{flagSource, flagPublication, flagSlot, flagWarehouse, flagCatalog, flagConfig}, storageFlags[2:])
)

// flags is a command's flags: the groups in one new slice, full, so that
// appending to it (commandFlags) never writes into another command's.
func flags(groups ...[]cli.Flag) []cli.Flag {
	out := slices.Concat(groups...)
	return out[:len(out):len(out)]
}

// commandFlags lets --debug follow the command as well as precede it, and
// makes a usage error (an unknown flag) one line that points at --help
// instead of the command's whole help.
func commandFlags(app *cli.App) {
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w (see pg2iceberg --help)", err)
	}
	var add func(cmds []*cli.Command, prefix string)
	add = func(cmds []*cli.Command, prefix string) {
		for _, cmd := range cmds {
			cmd.Flags = append(cmd.Flags, flagDebug)
			name := prefix + cmd.Name
			cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return fmt.Errorf("%w (see pg2iceberg %s --help)", err, name)
			}
			add(cmd.Subcommands, name+" ") // tag create, branch drop, ...
		}
	}
	add(app.Commands, "")
}

// debugLevel reports whether --debug was given before or after the command.
func debugLevel(c *cli.Context) bool {
	for _, x := range c.Lineage() {
		if x.Bool(flagDebug.Name) {
			return true
		}
	}
	return false
}

// The history commands' (snapshots, read, diff, tag, branch, rollback).
var (
	flagHistoryTable = &cli.StringFlag{Name: "table", Required: true, Usage: "the Iceberg table, as namespace.table (a mirror such as shop.orders, or its shop.orders__changelog)"}
	flagJSON         = &cli.BoolFlag{Name: "json", Usage: "print JSON, one object per line"}
	flagFormat       = &cli.StringFlag{Name: "format", Value: "table", Usage: "table (aligned columns), csv (a header line, NULL as empty) or json (one object per line)"}

	flagAtSnapshot = &cli.Int64Flag{Name: "snapshot", Usage: "read the table at this snapshot id (see pg2iceberg snapshots)"}
	flagAtTime     = &cli.StringFlag{Name: "time", Usage: "read the table as it was at this time, RFC 3339, e.g. 2026-12-02T03:00:00Z"}
	flagAtRef      = &cli.StringFlag{Name: "ref", Usage: "read the table at this tag or branch"}
	flagAtLSN      = &cli.StringFlag{Name: "lsn", Usage: "read the table as of this source LSN, e.g. 0/16B3748: its newest snapshot whose watermark is at or below it"}
	flagWhere      = &cli.StringFlag{Name: "where", Usage: "only rows that match, e.g. \"status = 'open' and amount >= 10\" (see docs/querying.md)"}
	flagColumns    = &cli.StringSliceFlag{Name: "columns", Usage: "only these columns, in this order, e.g. id,status"}
	flagLimit      = &cli.Int64Flag{Name: "limit", Usage: "at most this many rows (0: all)"}

	flagFrom = &cli.StringFlag{Name: "from", Required: true, Usage: "the older point: a snapshot id, ref:NAME, time:RFC3339 or lsn:X/Y"}
	flagTo   = &cli.StringFlag{Name: "to", Value: "current", Usage: "the newer point, as --from (default: the current snapshot)"}

	flagRefName        = &cli.StringFlag{Name: "name", Required: true, Usage: "the tag's or branch's name: letters, digits, - and _"}
	flagRefTable       = &cli.StringFlag{Name: "table", Usage: flagHistoryTable.Usage}
	flagTagAll         = &cli.BoolFlag{Name: "all", Usage: "tag every table the bridge writes, each at its snapshot for one LSN (a consistent cut across tables)"}
	flagTagLSN         = &cli.StringFlag{Name: "lsn", Usage: "with --all: the LSN to tag at, e.g. 0/16B3748 (default: the newest complete cut)"}
	flagRefAt          = &cli.StringFlag{Name: "at", Value: "current", Usage: "the snapshot it points at, as diff's --from (default: the current snapshot)"}
	flagRollTo         = &cli.StringFlag{Name: "to", Required: true, Usage: "the snapshot to go back to: a snapshot id, or a tag (ref:NAME or the plain name)"}
	flagRollbackSource = &cli.StringFlag{Name: "source", EnvVars: env("source"),
		Usage: "PostgreSQL URL of the bridge's source: required to roll back a table the bridge writes, to make sure the bridge is stopped (it holds the slot's lease while it runs)"}
)

// The key index's memory budget and where it spills (see iceberg.KeyIndexConfig).
var (
	flagKeyIndexMemory = &cli.StringFlag{Name: "key-index-memory", EnvVars: env("key-index-memory"), Value: "256MiB", Usage: "memory of each mirror's key index, e.g. 256MiB; past it the keys spill to sorted files in --key-index-dir (0: all in memory)"}
	flagKeyIndexDir    = &cli.StringFlag{Name: "key-index-dir", EnvVars: env("key-index-dir"), Usage: "local directory for the key index's spilled keys, a subdirectory per mirror table (default: pg2iceberg-keyindex in the system temp dir)"}
)
