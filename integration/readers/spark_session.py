#!/usr/bin/env python3
"""One Spark SQL session (pyspark, local[1]) attached to an Iceberg REST
catalog as "pg", answering requests one JSON line at a time.

    spark_session.py --rest-uri http://127.0.0.1:8181 --jar iceberg-spark-runtime.jar \\
        [--token-env VAR] [--tmp DIR]

stdin, one request per line:
    {"op": "sql", "sql": "SELECT ..."}            -> canonical rows
    {"op": "report", "orders": "pg.shop.orders VERSION AS OF 1",
     "customers": "...", "changelog": "..."}      -> the interop report
    {"op": "dump", "sql": "SELECT ..."}           -> rows in the canonical
        forms of pyiceberg_dump.py, every type (see dump_rows_of)
    {"op": "error", "sql": "SELECT ..."}          -> the error Spark raises
        running it, or null when it runs
    {"op": "schema", "sql": "SELECT ..."}         -> the result's columns as
        Spark types them (see schema_of)
stdout, one answer per request, on a line starting with "@@ ":
    @@ {"ok": true, "result": ...}  or  @@ {"ok": false, "error": "..."}
A line "@@ {"ready": true}" comes first, once the session is up. Spark
logs go to stderr.
"""

import argparse
import json
import os
import sys
import time

import interop

MARK = "@@ "


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rest-uri", required=True)
    p.add_argument("--jar", required=True, help="the iceberg-spark-runtime jar")
    p.add_argument("--token-env", help="environment variable holding the REST catalog's bearer token")
    p.add_argument("--tmp", help="directory for Spark's local files")
    return p.parse_args(argv)


def session(args):
    # pyspark turns TIMESTAMP values into naive datetimes in the process's
    # time zone: make that UTC, like the session's.
    os.environ["TZ"] = "UTC"
    time.tzset()
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[1]").appName("pg2iceberg-interop")
         .config("spark.jars", args.jar)
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.pg", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.pg.type", "rest")
         .config("spark.sql.catalog.pg.uri", args.rest_uri)
         # Spark caches loaded tables for 30s by default; the test wants
         # each query to see the newest commit.
         .config("spark.sql.catalog.pg.cache-enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "1g"))
    tok = interop.token(args)
    if tok:
        b = b.config("spark.sql.catalog.pg.token", tok)
    if args.tmp:
        b = (b.config("spark.local.dir", args.tmp)
             .config("spark.sql.warehouse.dir", os.path.join(args.tmp, "spark-warehouse")))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows_of(spark):
    from pyspark.sql.types import TimestampType

    def rows(sql):
        df = spark.sql(sql)
        tz = {f.name: isinstance(f.dataType, TimestampType) for f in df.schema.fields}
        return [{k: interop.value(v, tz.get(k, False)) for k, v in r.asDict(recursive=True).items()} for r in df.collect()]
    return rows


def dump_rows_of(spark):
    """Rows through Arrow, in pyiceberg_dump.py's canonical forms.

    collect() turns dates and timestamps into Python's date and datetime,
    which hold neither BC years nor years after 9999, and floats into
    Python floats, which lose float32's shortest text. Arrow carries Spark's
    own values: dates as days and timestamps as microseconds since 1970
    (with the session's zone, UTC, for TIMESTAMP; none for TIMESTAMP_NTZ),
    float32, decimals with their scale, maps as maps. Spark reads Iceberg's
    uuid as a string, already in canonical form."""
    import pyarrow as pa
    import pyiceberg_dump

    def rows(sql):
        # pyspark 3.5 has no public DataFrame.toArrow; toPandas uses this.
        batches = spark.sql(sql)._collect_as_arrow()
        if not batches:
            return []
        table = pa.Table.from_batches(batches)
        cols = [pyiceberg_dump.convert_array(pa.concat_arrays(table.column(n).chunks), None) for n in table.column_names]
        return [dict(zip(table.column_names, vals)) for vals in zip(*cols)]
    return rows


def schema_of(spark):
    """The columns of a query's result, in order, as Spark types them:
    [{"name", "type", "nullable"}], type being Spark's own name for it
    (DataType.simpleString: int, bigint, decimal(8,2), timestamp,
    struct<id:int,v:string>); a struct column also has "fields", its
    fields in the same form. The query is analysed, not run."""
    from pyspark.sql.types import StructType

    def column(f):
        c = {"name": f.name, "type": f.dataType.simpleString(), "nullable": f.nullable}
        if isinstance(f.dataType, StructType):
            c["fields"] = [column(x) for x in f.dataType.fields]
        return c

    def schema(sql):
        return [column(f) for f in spark.sql(sql).schema.fields]
    return schema


def answer(obj):
    sys.stdout.write(MARK + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main(argv):
    args = parse_args(argv)
    try:
        spark = session(args)
    except Exception as e:
        answer({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    rows, dump = rows_of(spark), dump_rows_of(spark)
    schema = schema_of(spark)
    answer({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req["op"] == "sql":
                result = rows(req["sql"])
            elif req["op"] == "dump":
                result = dump(req["sql"])
            elif req["op"] == "schema":
                result = schema(req["sql"])
            elif req["op"] == "error":
                try:
                    spark.sql(req["sql"]).collect()
                    result = None
                except Exception as e:
                    result = f"{type(e).__name__}: {e}"[:4000]
            elif req["op"] == "report":
                result = interop.sql_report(rows, req["orders"], req["customers"], req["changelog"])
            else:
                raise ValueError(f"unknown op {req['op']!r}")
            answer({"ok": True, "result": result})
        except Exception as e:  # report the failure, keep the session
            answer({"ok": False, "error": f"{type(e).__name__}: {e}"[:4000]})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
