#!/usr/bin/env python3
"""One Spark SQL JVM (pyspark, local[1]) shared by the tests of a run, each
with a session of its own attached to its own Iceberg REST catalog as "pg",
answering requests one JSON line at a time.

    spark_session.py --jar iceberg-spark-runtime.jar [--tmp DIR] [--trust-store P12]

stdin, one request per line, each naming its session:
    {"op": "open", "session": "s1", "uri": "http://127.0.0.1:8181",
     "token": "..."}                               -> null; a new session
        whose catalog "pg" is the REST catalog at uri (token optional; or
        "credential": "id:secret", traded for a token at uri's
        /v1/oauth/tokens; an https uri's CA must be in the JVM's trust
        store, javax.net.ssl.trustStore; "warehouse" optional, e.g.
        "consistent" for a session pinned to one consistent cut)
    {"op": "open", "session": "s2", "jdbc_name": "pg2iceberg",
     "jdbc_uri": "jdbc:postgresql://127.0.0.1:5432/lake",
     "jdbc_user": "postgres", "jdbc_warehouse": "file:///abs/wh",
     "password": "..."}                           -> null; a new session
        whose catalog of that name is Iceberg's JdbcCatalog on that database
        (the bridge's Postgres SQL catalog; needs --jdbc-jar)
    {"op": "close", "session": "s1"}              -> null
    {"op": "sql", "session": "s1", "sql": "SELECT ..."} -> canonical rows
    {"op": "report", "session": "s1", "orders": "pg.shop.orders VERSION AS OF 1",
     "customers": "...", "changelog": "..."}      -> the interop report
    {"op": "dump", "session": "s1", "sql": "SELECT ..."} -> rows in the
        canonical forms of pyiceberg_dump.py, every type (see dump_rows_of)
    {"op": "error", "session": "s1", "sql": "SELECT ..."} -> the error Spark
        raises running it, or null when it runs
    {"op": "schema", "session": "s1", "sql": "SELECT ..."} -> the result's
        columns as Spark types them (see schema_of)
    {"op": "scan_metrics", "session": "s1", "sql": "SELECT ..."} -> {"rows":
        canonical rows, "scans": [{"node": "BatchScan pg.public.t",
        "metrics": {"resultDataFiles": 1, ...}}]}: the SQL metrics of each
        scan node of the executed plan (see scan_metrics_of)
stdout, one answer per request, on a line starting with "@@ ":
    @@ {"ok": true, "result": ...}  or  @@ {"ok": false, "error": "..."}
A line "@@ {"ready": true}" comes first, once the JVM is up. Spark logs go
to stderr. The token comes on stdin, never in the arguments.
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
    p.add_argument("--jar", required=True, help="the iceberg-spark-runtime jar")
    p.add_argument("--tmp", help="directory for Spark's local files")
    p.add_argument("--trust-store", help="PKCS12 trust store (password changeit) the JVM trusts for https catalogs")
    p.add_argument("--jdbc-jar", help="the PostgreSQL JDBC driver jar, for JdbcCatalog sessions")
    return p.parse_args(argv)


# Per session: Spark caches loaded tables for 30s by default, and the tests
# want each query to see the newest commit.
SESSION_CONF = {
    "spark.sql.catalog.pg": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.pg.type": "rest",
    "spark.sql.catalog.pg.cache-enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "1",
}


def base_session(args):
    # pyspark turns TIMESTAMP values into naive datetimes in the process's
    # time zone: make that UTC, like the sessions'.
    os.environ["TZ"] = "UTC"
    time.tzset()
    if args.trust_store:
        # The JVM pyspark launches inherits this; Iceberg's REST client
        # uses the JVM's default trust managers.
        opts = (f"-Djavax.net.ssl.trustStore={args.trust_store} -Djavax.net.ssl.trustStoreType=PKCS12 "
                f"-Djavax.net.ssl.trustStorePassword=changeit")
        os.environ["JAVA_TOOL_OPTIONS"] = (os.environ.get("JAVA_TOOL_OPTIONS", "") + " " + opts).strip()
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[1]").appName("pg2iceberg-interop")
         .config("spark.jars", ",".join(j for j in (args.jar, args.jdbc_jar) if j))
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "1g"))
    for k, v in SESSION_CONF.items():
        if k != "spark.sql.catalog.pg":  # no catalog pg in the base session
            b = b.config(k, v)
    if args.jdbc_jar:
        # java.sql.DriverManager finds drivers on the JVM's class path only.
        b = b.config("spark.driver.extraClassPath", args.jdbc_jar)
    if args.tmp:
        b = (b.config("spark.local.dir", args.tmp)
             .config("spark.sql.warehouse.dir", os.path.join(args.tmp, "spark-warehouse")))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def open_session(base, uri, token, credential=None, warehouse=None):
    """A session of its own (its own SQL conf and catalogs, the JVM and
    the extensions shared) whose catalog "pg" is the REST catalog at uri
    (asking /v1/config for warehouse, when given)."""
    s = base.newSession()
    for k, v in SESSION_CONF.items():
        s.conf.set(k, v)
    s.conf.set("spark.sql.catalog.pg.uri", uri)
    if warehouse:
        s.conf.set("spark.sql.catalog.pg.warehouse", warehouse)
    if token:
        s.conf.set("spark.sql.catalog.pg.token", token)
    if credential:
        s.conf.set("spark.sql.catalog.pg.credential", credential)
        s.conf.set("spark.sql.catalog.pg.oauth2-server-uri", uri + "/v1/oauth/tokens")
    return s


def open_jdbc_session(base, req):
    """A session of its own whose catalog req["jdbc_name"] is Iceberg's
    JdbcCatalog on the database at req["jdbc_uri"]. The catalog's name is the
    catalog_name of its rows in iceberg_tables: the bridge's catalog name.
    jdbc.schema-version V1 is the schema iceberg-go creates (iceberg_tables
    with iceberg_type)."""
    s = base.newSession()
    for k, v in SESSION_CONF.items():
        if k != "spark.sql.catalog.pg":
            s.conf.set(k, v)
    c = "spark.sql.catalog." + req["jdbc_name"]
    conf = {
        c: "org.apache.iceberg.spark.SparkCatalog",
        c + ".type": "jdbc",
        c + ".uri": req["jdbc_uri"],
        c + ".jdbc.user": req["jdbc_user"],
        c + ".jdbc.password": req.get("password") or "",
        c + ".jdbc.schema-version": "V1",
        c + ".warehouse": req["jdbc_warehouse"],
        c + ".cache-enabled": "false",
    }
    for k, v in conf.items():
        s.conf.set(k, v)
    return s


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


def scan_metrics_of(spark):
    """Runs a query and returns its rows and the SQL metrics of the scan
    nodes (leaves) of its executed plan, after adaptive execution: for an
    Iceberg table, BatchScan's resultDataFiles, skippedDataFiles,
    numOutputRows and the rest of its scan report."""
    jvm = spark._jvm

    def metrics(sql):
        df = spark.sql(sql)
        out = {"rows": [{k: interop.value(v, False) for k, v in r.asDict(recursive=True).items()} for r in df.collect()], "scans": []}
        plan = df._jdf.queryExecution().executedPlan()
        if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            plan = plan.executedPlan()
        todo = [plan]
        while todo:
            p = todo.pop()
            children = p.children()
            todo.extend(children.apply(i) for i in range(children.size()))
            if children.size() == 0:
                m = jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(p.metrics()).asJava()
                out["scans"].append({"node": p.nodeName(), "metrics": {k: m.get(k).value() for k in m.keySet()}})
        return out
    return metrics


def answer(obj):
    sys.stdout.write(MARK + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Session:
    def __init__(self, spark):
        self.spark = spark
        self.rows, self.dump, self.schema = rows_of(spark), dump_rows_of(spark), schema_of(spark)
        self.scan_metrics = scan_metrics_of(spark)


def handle(base, sessions, req):
    op, name = req["op"], req["session"]
    if op == "open":
        if "jdbc_uri" in req:
            sessions[name] = Session(open_jdbc_session(base, req))
        else:
            sessions[name] = Session(open_session(base, req["uri"], req.get("token"), req.get("credential"), req.get("warehouse")))
        return None
    if op == "close":
        sessions.pop(name, None)
        return None
    s = sessions.get(name)
    if s is None:
        raise ValueError(f"no open session {name!r}")
    if op == "sql":
        return s.rows(req["sql"])
    if op == "dump":
        return s.dump(req["sql"])
    if op == "schema":
        return s.schema(req["sql"])
    if op == "scan_metrics":
        return s.scan_metrics(req["sql"])
    if op == "error":
        try:
            s.spark.sql(req["sql"]).collect()
            return None
        except Exception as e:
            return f"{type(e).__name__}: {e}"[:4000]
    if op == "report":
        return interop.sql_report(s.rows, req["orders"], req["customers"], req["changelog"])
    raise ValueError(f"unknown op {op!r}")


def main(argv):
    args = parse_args(argv)
    try:
        base = base_session(args)
    except Exception as e:
        answer({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    sessions = {}
    answer({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer({"ok": True, "result": handle(base, sessions, json.loads(line))})
        except Exception as e:  # report the failure, keep the session
            answer({"ok": False, "error": f"{type(e).__name__}: {e}"[:4000]})
    base.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
