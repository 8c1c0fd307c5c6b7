#!/usr/bin/env python3
"""The interop report (see interop.py) read with DuckDB's iceberg extension.

    duckdb_report.py --rest-uri http://127.0.0.1:8181 [--token-env VAR]
    duckdb_report.py --rest-uri https://... --client-id ID --secret-env VAR --ca-cert ca.pem
    duckdb_report.py --metadata shop.orders=/abs/00003-....metadata.json \\
        --metadata shop.customers=... --metadata shop.orders__changelog=...
    duckdb_report.py --rest-uri http://... --token-env VAR --query "SELECT count(*) FROM pg.public.t"

With --rest-uri it ATTACHes the REST catalog; with --metadata it reads the
given metadata files with iceberg_scan, no catalog at all. With --query it
prints the query's first row as a Python tuple instead of the report. The extensions
come from the duckdb-ext-* wheels (scripts/setup.sh) and load offline.
Exit status 3 with "unavailable: ..." when DuckDB or the extension cannot
be loaded.
"""

import argparse
import os
import sys

import interop


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rest-uri")
    p.add_argument("--token-env", help="environment variable holding the REST catalog's bearer token")
    p.add_argument("--client-id", help="OAuth2 client id; its secret is in --secret-env")
    p.add_argument("--secret-env", help="environment variable holding the OAuth2 client secret")
    p.add_argument("--ca-cert", help="PEM file of the CA that signed the catalog's TLS certificate")
    p.add_argument("--metadata", action="append", default=[], help="table=metadata file location")
    p.add_argument("--query", help="with --rest-uri: print the first row of this query (tables as pg.<ns>.<table>) instead of the report")
    return p.parse_args(argv)


def connect(ca_cert=None):
    import duckdb
    import duckdb_ext
    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for ext in ("avro", "httpfs", "iceberg"):
        con.load_extension(ext)
    con.execute("SET TimeZone = 'UTC'")
    if ca_cert:
        con.execute(f"SET ca_cert_file = {quote(ca_cert)}")
    return con


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def main(argv):
    args = parse_args(argv)
    if args.query and not args.rest_uri:
        print("--query reads tables of an ATTACHed catalog: give --rest-uri too", file=sys.stderr)
        return 2
    try:
        con = connect(args.ca_cert)
    except Exception as e:
        print(f"unavailable: duckdb with its iceberg extension does not load offline: {type(e).__name__}: {e}", file=sys.stderr)
        return 3

    def rows(sql):
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [{n: interop.value(v) for n, v in zip(names, r)} for r in cur.fetchall()]

    try:
        if args.rest_uri:
            tok = interop.token(args)
            if args.client_id:
                con.execute(f"CREATE SECRET pg2iceberg_oauth (TYPE iceberg, CLIENT_ID {quote(args.client_id)}, "
                            f"CLIENT_SECRET {quote(interop.env_secret(args.secret_env))}, "
                            f"OAUTH2_SERVER_URI {quote(args.rest_uri + '/v1/oauth/tokens')})")
                con.execute(f"ATTACH 'pg2iceberg' AS pg (TYPE iceberg, ENDPOINT {quote(args.rest_uri)}, SECRET pg2iceberg_oauth)")
            elif tok:
                con.execute(f"CREATE SECRET pg2iceberg_token (TYPE iceberg, TOKEN {quote(tok)})")
                con.execute(f"ATTACH 'pg2iceberg' AS pg (TYPE iceberg, ENDPOINT {quote(args.rest_uri)}, SECRET pg2iceberg_token)")
            else:
                con.execute(f"ATTACH 'pg2iceberg' AS pg (TYPE iceberg, ENDPOINT {quote(args.rest_uri)}, AUTHORIZATION_TYPE 'none')")
            if args.query:
                print(con.execute(args.query).fetchone())
                return 0
            report = interop.sql_report(rows, "pg.shop.orders", "pg.shop.customers", "pg.shop.orders__changelog")
            report["tables"] = sorted(f"{r['schema']}.{r['name']}" for r in rows("SHOW ALL TABLES") if r["database"] == "pg")
        else:
            files = dict(m.split("=", 1) for m in args.metadata)
            ref = {t: f"iceberg_scan({quote(loc)})" for t, loc in files.items()}
            report = interop.sql_report(rows, ref["shop.orders"], ref["shop.customers"], ref["shop.orders__changelog"])
    except Exception as e:
        print(f"error: duckdb report failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    interop.emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
