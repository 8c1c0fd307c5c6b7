#!/usr/bin/env python3
"""Sums one column of several tables read through ONE pyiceberg REST
catalog session, for TestConsistentCut.

    pyiceberg_cut.py < request

stdin, one JSON object:
    {"uri": "http://127.0.0.1:8181", "token": "...", "warehouse": "consistent",
     "tables": ["public.accounts_a", "public.accounts_b"], "column": "balance",
     "ref": "month-end" (optional: read each table at this tag)}
stdout, one JSON line:
    {"prefix": the prefix /v1/config handed out, "sums": {table: sum}}
The token comes on stdin, never in the arguments.
"""

import json
import sys


def main():
    req = json.loads(sys.stdin.read())
    import pyarrow.compute as pc
    from pyiceberg.catalog.rest import RestCatalog

    props = {"uri": req["uri"], "warehouse": req["warehouse"]}
    if req.get("token"):
        props["token"] = req["token"]
    catalog = RestCatalog("pg", **props)
    sums = {}
    for name in req["tables"]:
        tbl = catalog.load_table(name)
        snapshot_id = None
        if req.get("ref"):
            snap = tbl.snapshot_by_name(req["ref"])
            if snap is None:
                raise SystemExit(f"table {name} has no ref {req['ref']!r}")
            snapshot_id = snap.snapshot_id
        col = tbl.scan(selected_fields=(req["column"],), snapshot_id=snapshot_id).to_arrow()[req["column"]]
        sums[name] = pc.sum(col).as_py() or 0
    print(json.dumps({"prefix": catalog.properties.get("prefix"), "sums": sums}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
