#!/usr/bin/env python3
"""Sums one column of several tables with DuckDB's iceberg extension, each
read through a fresh ATTACH of the served REST catalog, for
TestConsistentCut.

    duckdb_cut.py < request

stdin, one JSON object:
    {"uri": "http://127.0.0.1:8181", "token": "...",
     "warehouses": ["consistent", "pg2iceberg"], "reads": 20,
     "tables": ["public.accounts_a", "public.accounts_b"], "column": "balance"}
stdout, one JSON line per read and warehouse, in order:
    {"read": 1, "warehouse": "consistent", "sums": {table: sum}}
Each read ATTACHes the warehouse anew (so a pinned warehouse gets the cut
/v1/config hands out then), sums every table in its own query, and
DETACHes. The token comes on stdin, never in the arguments. Exit status 3
with "unavailable: ..." when DuckDB or the extension cannot be loaded.
"""

import json
import sys

from duckdb_report import connect, quote


def main():
    req = json.loads(sys.stdin.read())
    try:
        con = connect()
    except Exception as e:
        print(f"unavailable: duckdb with its iceberg extension does not load offline: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    auth = "AUTHORIZATION_TYPE 'none'"
    if req.get("token"):
        con.execute(f"CREATE SECRET cut_token (TYPE iceberg, TOKEN {quote(req['token'])})")
        auth = "SECRET cut_token"
    col = req["column"]
    for i in range(1, req["reads"] + 1):
        for wh in req["warehouses"]:
            con.execute(f"ATTACH {quote(wh)} AS cat (TYPE iceberg, ENDPOINT {quote(req['uri'])}, {auth})")
            sums = {}
            for name in req["tables"]:
                ns, tbl = name.split(".", 1)
                sums[name] = con.execute(f'SELECT CAST(coalesce(sum("{col}"), 0) AS BIGINT) FROM cat."{ns}"."{tbl}"').fetchone()[0]
            con.execute("DETACH cat")
            print(json.dumps({"read": i, "warehouse": wh, "sums": sums}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
