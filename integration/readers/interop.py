"""Shared by the interop readers: canonical values and the report.

Every reader of integration/interop_test.go prints one JSON report of the
same snapshot of shop.orders and shop.customers:

    {"tables":    ["shop.orders", ...]        tables the catalog lists
     "snapshots": {"shop.orders": id, ...}    snapshots read, where known
     "orders":    [row, ...]                  every row, canonical text
     "customers": [row, ...]
     "count":     "N", "sum": "S"             count(*), sum(amount) of orders
     "paid":      {"count": "n", "sum": "s"}  the same WHERE status = 'paid'
     "join":      [{"active", "count", "sum"}] orders JOIN customers
                                              GROUP BY customers.active
     "changes":   {"I": "n", ...}}            orders__changelog rows per op

Values follow pyiceberg_dump.py's canonical forms, which the Go test also
produces from PostgreSQL: integers and decimals as text (decimals keep
their scale), booleans t/f, bytes \\x + hex, timestamps
YYYY-MM-DD HH:MM:SS.ffffff (+00 for timestamptz, in UTC), NULL as null.
"""

import datetime
import decimal
import json
import os
import sys
import uuid


def value(v, tz=False):
    """Canonical text of a Python value from a DB-API style reader.

    tz marks a naive datetime that is a UTC timestamptz (Spark returns
    those naive)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            tz = True
        text = (f"{v.year:04d}-{v.month:02d}-{v.day:02d} "
                f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}")
        return text + ("+00" if tz else "")
    if isinstance(v, datetime.date):
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {k: value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [value(x) for x in v]
    raise TypeError(f"no canonical form for {type(v).__name__}")


def sql_report(rows, orders, customers, changelog):
    """The report from a SQL engine. rows(sql) returns canonical row dicts;
    orders, customers and changelog are table references (with any time
    travel clause)."""
    total = rows(f"SELECT count(*) AS count, sum(amount) AS sum FROM {orders}")[0]
    paid = rows(f"SELECT count(*) AS count, sum(amount) AS sum FROM {orders} WHERE status = 'paid'")[0]
    join = rows(f"SELECT c.active AS active, count(*) AS count, sum(o.amount) AS sum "
                f"FROM {orders} AS o JOIN {customers} AS c ON o.customer_id = c.id GROUP BY c.active")
    changes = rows(f"SELECT op, count(*) AS count FROM {changelog} GROUP BY op")
    return {
        "orders": rows(f"SELECT * FROM {orders}"),
        "customers": rows(f"SELECT * FROM {customers}"),
        "count": total["count"], "sum": total["sum"],
        "paid": paid,
        "join": join,
        "changes": {r["op"]: r["count"] for r in changes},
    }


def token(args):
    """The bearer token from the environment variable args.token_env."""
    if not args.token_env:
        return None
    return env_secret(args.token_env)


def env_secret(name):
    """A secret from the environment variable name, never from arguments."""
    v = os.environ.get(name, "")
    if not v:
        raise SystemExit(f"error: {name} is empty")
    return v


def emit(report):
    sys.stdout.write(json.dumps(report, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()
