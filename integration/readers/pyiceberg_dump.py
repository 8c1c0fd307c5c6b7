#!/usr/bin/env python3
"""Dump an Iceberg table with pyiceberg, one canonical JSON object per row.

Used by pg2iceberg's Go integration tests as an independent reader.

    pyiceberg_dump.py --catalog-uri sqlite:////abs/catalog.db \
        --catalog-name pg2iceberg --warehouse file:///abs/wh \
        --table schema.table [--s3-endpoint URL --s3-region R] \
        [--snapshot-id N] [--schema]

S3 credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.

Row output: columns in schema order; every non-null value is a string:
  ints decimal; floats as PostgreSQL prints them (shortest round-trip
  digits, positional for decimal exponents -4..14, 5 for float32, else
  1.5e+20 style; NaN, Infinity, -Infinity, -0); decimals without exponent,
  keeping scale; strings as-is; bytes '\\x' + lowercase hex; dates
  YYYY-MM-DD (years beyond 9999 in full, ' BC' after BC dates); times
  HH:MM:SS.ffffff; timestamps YYYY-MM-DD HH:MM:SS.ffffff (9 digits for ns),
  timestamptz in UTC with '+00', then ' BC' for BC; uuids lowercase
  canonical; booleans t/f. Structs are JSON objects, lists JSON arrays, maps
  JSON arrays of {"key": k, "value": v} sorted by key; NULL is null. Rows are
  sorted by their JSON text. (docs/type-mapping.md, "Canonical text forms".)

--schema prints [{"id", "name", "type", "required"}, ...] instead.
Exit status 1 with "error: ..." on stderr on any failure.
"""

import argparse
import decimal
import json
import math
import os
import struct
import sys
import uuid

UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def parse_args(argv):
    p = argparse.ArgumentParser(description="dump an iceberg table as canonical json rows")
    p.add_argument("--catalog-uri", required=True,
                   help="sqlalchemy uri, e.g. sqlite:////abs/catalog.db, or http(s)://... for a REST catalog")
    p.add_argument("--catalog-name", default="pg2iceberg")
    p.add_argument("--warehouse", required=True, help="file:///... or s3://bucket/prefix")
    p.add_argument("--table", required=True, help="namespace.table")
    p.add_argument("--s3-endpoint")
    p.add_argument("--s3-region", default="us-east-1")
    p.add_argument("--snapshot-id", type=int)
    p.add_argument("--schema", action="store_true", help="print the schema instead of rows")
    return p.parse_args(argv)


class DumpError(Exception):
    pass


def catalog_properties(args):
    props = {
        "uri": args.catalog_uri,
        "warehouse": args.warehouse,
        "init_catalog_tables": "false",
    }
    if args.s3_endpoint or args.warehouse.startswith("s3"):
        key = os.environ.get("AWS_ACCESS_KEY_ID", "")
        secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        if not key or not secret:
            raise DumpError("s3 warehouse needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
        props.update({
            "s3.access-key-id": key,
            "s3.secret-access-key": secret,
            "s3.region": args.s3_region,
            "s3.path-style-access": "true",
            "s3.force-virtual-addressing": "false",
        })
        if args.s3_endpoint:
            props["s3.endpoint"] = args.s3_endpoint
    return props


def load_table(args):
    prefix = "sqlite:///"
    if args.catalog_uri.startswith(prefix):
        path = args.catalog_uri[len(prefix):]
        if path and path != ":memory:" and not os.path.exists(path):
            raise DumpError(f"catalog database {path} does not exist: check --catalog-uri "
                            "(an absolute path needs four slashes: sqlite:////abs/path.db)")
    try:
        from pyiceberg.catalog.rest import RestCatalog
        from pyiceberg.catalog.sql import SqlCatalog
        from pyiceberg.exceptions import NoSuchTableError
    except ImportError as e:
        raise DumpError(f"pyiceberg is not installed ({e}): run scripts/setup.sh") from e
    if args.catalog_uri.startswith(("http://", "https://")):
        props = catalog_properties(args)
        del props["init_catalog_tables"]
        catalog = RestCatalog(args.catalog_name, **props)
    else:
        catalog = SqlCatalog(args.catalog_name, **catalog_properties(args))
    try:
        return catalog.load_table(args.table)
    except NoSuchTableError as e:
        raise DumpError(f"table {args.table} not found in catalog {args.catalog_name!r} "
                        f"({e}): check --table and --catalog-name") from e


def table_schema(table, snapshot_id):
    if snapshot_id is None:
        return table.schema()
    snap = table.snapshot_by_id(snapshot_id)
    if snap is None:
        ids = [s.snapshot_id for s in table.snapshots()]
        raise DumpError(f"snapshot {snapshot_id} not found; the table has snapshots {ids}")
    if snap.schema_id is not None:
        for sid, schema in table.schemas().items():
            if sid == snap.schema_id:
                return schema
    return table.schema()


def schema_json(schema):
    return [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
            for f in schema.fields]


# ---------------------------------------------------------------- values

def shortest_digits(v, bits):
    """Shortest decimal digits that read back to v, and the decimal exponent
    of the first digit: 1234.5 -> ("12345", 3)."""
    if bits == 32:
        f32 = struct.unpack("f", struct.pack("f", v))[0]
        for n in range(1, 10):
            text = f"{f32:.{n - 1}e}"
            if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
                break
    else:
        text = f"{v:.16e}"
        for n in range(1, 18):
            cand = f"{v:.{n - 1}e}"
            if float(cand) == v:
                text = cand
                break
    mant, exp = text.split("e")
    digits = mant.replace("-", "").replace(".", "").rstrip("0") or "0"
    return digits, int(exp)


def fmt_float(v, bits):
    """A float as PostgreSQL prints it with extra_float_digits > 0."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign = "-" if v < 0 else ""
    digits, exp = shortest_digits(abs(v), bits)
    if exp < -4 or exp >= (6 if bits == 32 else 15):
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return sign + "0." + "0" * (-exp - 1) + digits
    if len(digits) <= exp + 1:
        return sign + digits + "0" * (exp + 1 - len(digits))
    return sign + digits[:exp + 1] + "." + digits[exp + 1:]


def fmt_decimal(d):
    return format(d, "f")


def civil_from_days(z):
    """Proleptic Gregorian (year, month, day) of days since 1970-01-01, any
    range, year 0 being 1 BC."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def fmt_ymd(days):
    y, m, d = civil_from_days(days)
    bc = y <= 0
    if bc:
        y = 1 - y
    return f"{y:04d}-{m:02d}-{d:02d}", bc


def fmt_timestamp(value, unit, tz):
    per_s = UNIT_PER_SECOND[unit]
    secs, frac = divmod(value, per_s)
    days, sod = divmod(secs, 86400)
    ymd, bc = fmt_ymd(days)
    h, rem = divmod(sod, 3600)
    m, sec = divmod(rem, 60)
    text = f"{ymd} {h:02d}:{m:02d}:{sec:02d}"
    if unit == "ns":
        text += f".{frac:09d}"
    else:
        text += f".{frac * (1_000_000 // per_s):06d}"
    return text + ("+00" if tz else "") + (" BC" if bc else "")


def fmt_time(value, unit):
    per_s = UNIT_PER_SECOND[unit]
    secs, frac = divmod(value, per_s)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    if unit == "ns":
        return f"{h:02d}:{m:02d}:{s:02d}.{frac:09d}"
    return f"{h:02d}:{m:02d}:{s:02d}.{frac * (1_000_000 // per_s):06d}"


def fmt_date(days):
    ymd, bc = fmt_ymd(days)
    return ymd + (" BC" if bc else "")


def convert_array(arr, ice_type):
    """Convert a pyarrow Array to a list of canonical python values."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg import types as it

    t = arr.type
    valid = arr.is_valid().to_pylist()

    def mask(values):
        return [v if ok else None for v, ok in zip(values, valid)]

    if isinstance(t, pa.BaseExtensionType):
        is_uuid = isinstance(ice_type, it.UUIDType) or t.extension_name == "arrow.uuid"
        storage = convert_array(arr.storage, None if is_uuid else ice_type)
        if is_uuid:
            return [None if v is None else str(uuid.UUID(hex=v[2:])) for v in storage]
        return storage
    if pa.types.is_boolean(t):
        return mask(["t" if v else "f" for v in arr.fill_null(False).to_pylist()])
    if pa.types.is_integer(t):
        return mask([str(v) for v in arr.fill_null(0).to_pylist()])
    if pa.types.is_floating(t):
        bits = 32 if pa.types.is_float32(t) or pa.types.is_float16(t) else 64
        return mask([fmt_float(v, bits) for v in arr.fill_null(0).to_pylist()])
    if pa.types.is_decimal(t):
        return [None if v is None else fmt_decimal(v) for v in arr.to_pylist()]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.to_pylist()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        vals = [None if v is None else "\\x" + v.hex() for v in arr.to_pylist()]
        if isinstance(ice_type, it.UUIDType):
            return [None if v is None else str(uuid.UUID(hex=v[2:])) for v in vals]
        return vals
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        days = pc.cast(arr.cast(pa.date32()), pa.int32()).fill_null(0).to_pylist()
        return mask([fmt_date(d) for d in days])
    if pa.types.is_time(t):
        raw = pc.cast(arr, pa.int64() if pa.types.is_time64(t) else pa.int32()).fill_null(0).to_pylist()
        return mask([fmt_time(v, t.unit) for v in raw])
    if pa.types.is_timestamp(t):
        raw = pc.cast(arr, pa.int64()).fill_null(0).to_pylist()
        tz = t.tz is not None or isinstance(ice_type, (it.TimestamptzType, getattr(it, "TimestamptzNanoType", ())))
        return mask([fmt_timestamp(v, t.unit, tz) for v in raw])
    if pa.types.is_struct(t):
        ice_fields = list(ice_type.fields) if isinstance(ice_type, it.StructType) else []
        cols, children = [], arr.flatten()
        for i in range(t.num_fields):
            child_ice = ice_fields[i].field_type if i < len(ice_fields) else None
            cols.append((t.field(i).name, convert_array(children[i], child_ice)))
        return mask([{name: col[r] for name, col in cols} for r in range(len(arr))])
    if pa.types.is_map(t):
        k_ice = ice_type.key_type if isinstance(ice_type, it.MapType) else None
        v_ice = ice_type.value_type if isinstance(ice_type, it.MapType) else None
        keys = convert_array(arr.keys, k_ice)
        items = convert_array(arr.items, v_ice)
        offsets = arr.offsets.to_pylist()
        out = [sorted(({"key": keys[j], "value": items[j]} for j in range(offsets[r], offsets[r + 1])),
                      key=lambda e: (e["key"] is not None, (e["key"] or "").encode("utf-8")))
               for r in range(len(arr))]
        return mask(out)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        elem_ice = ice_type.element_type if isinstance(ice_type, it.ListType) else None
        values = convert_array(arr.values, elem_ice)
        offsets = arr.offsets.to_pylist()
        return mask([values[offsets[r]:offsets[r + 1]] for r in range(len(arr))])
    if pa.types.is_fixed_size_list(t):
        elem_ice = ice_type.element_type if isinstance(ice_type, it.ListType) else None
        flat = convert_array(arr.flatten(), elem_ice)
        n = t.list_size
        return mask([flat[r * n:(r + 1) * n] for r in range(len(arr))])
    if pa.types.is_null(t):
        return [None] * len(arr)
    raise DumpError(f"unsupported arrow type {t} (iceberg type {ice_type}): extend pyiceberg_dump.py")


def dump_rows(table, schema, snapshot_id, out):
    import pyarrow as pa
    scan = table.scan(snapshot_id=snapshot_id) if snapshot_id is not None else table.scan()
    arrow = scan.to_arrow()
    ice_by_name = {f.name: f.field_type for f in schema.fields}
    names = arrow.column_names
    columns = []
    for name in names:
        chunked = arrow.column(name)
        arr = pa.concat_arrays(chunked.chunks) if chunked.num_chunks else pa.array([], type=chunked.type)
        columns.append(convert_array(arr, ice_by_name.get(name)))
    lines = []
    for r in range(arrow.num_rows):
        row = {name: col[r] for name, col in zip(names, columns)}
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    lines.sort()
    for line in lines:
        out.write(line + "\n")


def scrub(text):
    for var in ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"):
        v = os.environ.get(var)
        if v:
            text = text.replace(v, "***")
    return text


def main(argv):
    args = parse_args(argv)
    try:
        sys.stdout.reconfigure(encoding="utf-8")
        table = load_table(args)
        schema = table_schema(table, args.snapshot_id)
        if args.schema:
            json.dump(schema_json(schema), sys.stdout)
            sys.stdout.write("\n")
        else:
            dump_rows(table, schema, args.snapshot_id, sys.stdout)
        sys.stdout.flush()
    except DumpError as e:
        print(f"error: {scrub(str(e))}", file=sys.stderr)
        return 1
    except Exception as e:  # any pyiceberg/pyarrow/sqlalchemy failure
        print(f"error: reading {args.table} with pyiceberg failed: {type(e).__name__}: {scrub(str(e))}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
