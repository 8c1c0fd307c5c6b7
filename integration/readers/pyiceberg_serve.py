#!/usr/bin/env python3
"""pyiceberg_dump.py as a service: one process answers many reads, so the
tests import pyiceberg and pyarrow (about 2 s of CPU) once per process
instead of once per read.

    pyiceberg_serve.py

stdin, one request per line:
    {"argv": [pyiceberg_dump.py's arguments], "env": {"AWS_...": "..."}}
    env (optional) holds variables for this request only (S3 credentials).
stdout, per request: a line
    @@ {"status": N, "stderr": "...", "bytes": L}
then L bytes: what pyiceberg_dump.py would have printed, exiting with N.
"""

import io
import json
import os
import sys

import pyiceberg_dump

# The imports a read makes, made once here.
import pyarrow  # noqa: F401
import pyiceberg.catalog.sql  # noqa: F401
import pyiceberg.table  # noqa: F401


def run(req):
    env = req.get("env") or {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    err = io.StringIO()
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        status = pyiceberg_dump.main(req["argv"])
    except SystemExit as e:  # argparse on bad arguments
        status = e.code if isinstance(e.code, int) else 2
    except Exception as e:
        print(f"error: pyiceberg_serve: {type(e).__name__}: {pyiceberg_dump.scrub(str(e))}", file=err)
        status = 1
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    out.flush()
    return status, err.getvalue(), out.buffer.getvalue()


def main():
    raw = sys.stdout.buffer
    for line in sys.stdin:
        if not line.strip():
            continue
        status, err, data = run(json.loads(line))
        head = json.dumps({"status": status, "stderr": err, "bytes": len(data)})
        raw.write(b"@@ " + head.encode("utf-8") + b"\n")
        raw.write(data)
        raw.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
