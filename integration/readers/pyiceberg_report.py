#!/usr/bin/env python3
"""The interop report (see interop.py) read with pyiceberg and pyarrow.

    pyiceberg_report.py --rest-uri http://127.0.0.1:8181 [--token-env VAR]
    pyiceberg_report.py --rest-uri https://... --credential-env VAR --ca-bundle ca.pem
    pyiceberg_report.py --sql-uri sqlite:////abs/catalog.db --warehouse file:///abs/wh

Aggregates are computed the way a pyiceberg user would: a scan (with the
row filter pushed down) into pyarrow, then pyarrow.compute.
"""

import argparse
import sys

import interop
import pyiceberg_dump as dump


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rest-uri", help="REST catalog URI")
    p.add_argument("--token-env", help="environment variable holding the REST catalog's bearer token")
    p.add_argument("--credential-env", help="environment variable holding the OAuth2 client credential id:secret")
    p.add_argument("--ca-bundle", help="PEM file of the CA that signed the catalog's TLS certificate")
    p.add_argument("--sql-uri", help="SQL catalog URI, e.g. sqlite:////abs/catalog.db")
    p.add_argument("--warehouse", help="warehouse of the SQL catalog")
    p.add_argument("--catalog-name", default="pg2iceberg")
    return p.parse_args(argv)


def open_catalog(args):
    if args.rest_uri:
        from pyiceberg.catalog.rest import RestCatalog
        props = {"uri": args.rest_uri}
        tok = interop.token(args)
        if tok:
            props["token"] = tok
        if args.credential_env:
            props["credential"] = interop.env_secret(args.credential_env)
            props["oauth2-server-uri"] = args.rest_uri + "/v1/oauth/tokens"
        if args.ca_bundle:
            props["ssl"] = {"cabundle": args.ca_bundle}
        return RestCatalog(args.catalog_name, **props)
    from pyiceberg.catalog.sql import SqlCatalog
    dump_args = argparse.Namespace(catalog_uri=args.sql_uri, warehouse=args.warehouse, s3_endpoint=None, s3_region="us-east-1")
    return SqlCatalog(args.catalog_name, **dump.catalog_properties(dump_args))


def rows(table, arrow):
    """Canonical row dicts of a scanned pyarrow table."""
    import pyarrow as pa
    ice = {f.name: f.field_type for f in table.schema().fields}
    names = arrow.column_names
    cols = []
    for name in names:
        chunked = arrow.column(name)
        arr = pa.concat_arrays(chunked.chunks) if chunked.num_chunks else pa.array([], type=chunked.type)
        cols.append(dump.convert_array(arr, ice.get(name)))
    return [dict(zip(names, vals)) for vals in zip(*cols)]


def count_sum(arrow):
    import pyarrow.compute as pc
    return {"count": str(arrow.num_rows), "sum": interop.value(pc.sum(arrow.column("amount")).as_py())}


def report(cat):
    import pyarrow.compute as pc
    tables = sorted(".".join(ident) for ns in cat.list_namespaces() for ident in cat.list_tables(ns))
    orders = cat.load_table("shop.orders")
    customers = cat.load_table("shop.customers")
    changelog = cat.load_table("shop.orders__changelog")
    o = orders.scan().to_arrow()
    c = customers.scan().to_arrow()
    paid = orders.scan(row_filter="status = 'paid'").to_arrow()
    joined = o.select(["customer_id", "amount"]).join(c.select(["id", "active"]), keys="customer_id", right_keys="id", join_type="inner")
    groups = joined.group_by("active").aggregate([("amount", "count", pc.CountOptions(mode="all")), ("amount", "sum")])
    ops = changelog.scan(selected_fields=("op",)).to_arrow().group_by("op").aggregate([("op", "count")])
    out = {
        "tables": tables,
        "snapshots": {name: t.current_snapshot().snapshot_id for name, t in (("shop.orders", orders), ("shop.customers", customers))},
        "orders": rows(orders, o),
        "customers": rows(customers, c),
        "paid": count_sum(paid),
        "join": [{"active": interop.value(g["active"]), "count": interop.value(g["amount_count"]), "sum": interop.value(g["amount_sum"])}
                 for g in groups.to_pylist()],
        "changes": {g["op"]: str(g["op_count"]) for g in ops.to_pylist()},
    }
    out.update(count_sum(o))
    return out


def main(argv):
    args = parse_args(argv)
    if bool(args.rest_uri) == bool(args.sql_uri):
        print("error: give --rest-uri or --sql-uri", file=sys.stderr)
        return 2
    try:
        interop.emit(report(open_catalog(args)))
    except Exception as e:  # any pyiceberg/pyarrow failure
        print(f"error: pyiceberg report failed: {type(e).__name__}: {dump.scrub(str(e))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
