#!/usr/bin/env bash
# Entry point of the compose stack's spark service. It writes Spark's
# configuration (spark-defaults.conf beside this script, plus the catalog
# token from the compose secret and the read-only S3 keys from the
# environment), runs the first query once the bridge has committed
# shop.orders (the first run also fetches the Iceberg jars), then stays up
# for `docker compose exec spark /opt/spark/bin/spark-sql`.
# Outside the stack (as checked by hand, docs/docker-compose.md): SPARK_HOME
# (default /opt/spark), CATALOG_TOKEN_FILE (default the compose secret) and
# SPARK_FIRST_QUERY_ONLY=1 (exit after the first query).
set -euo pipefail
conf=${SPARK_CONF_DIR:?SPARK_CONF_DIR is not set}
mkdir -p "$conf"
umask 077
{
	cat "$(dirname "$0")/spark-defaults.conf"
	echo "spark.sql.catalog.pg.token $(tr -d '[:space:]' <"${CATALOG_TOKEN_FILE:-/run/secrets/catalog_token}")"
	echo "spark.sql.catalog.pg.s3.access-key-id ${READER_ACCESS_KEY:?READER_ACCESS_KEY is not set}"
	echo "spark.sql.catalog.pg.s3.secret-access-key ${READER_SECRET_KEY:?READER_SECRET_KEY is not set}"
} >"$conf/spark-defaults.conf"

trap 'exit 0' INT TERM
query="SELECT status, count(*) AS orders, sum(amount) AS amount FROM pg.shop.orders GROUP BY status ORDER BY status"
for attempt in $(seq 1 40); do
	echo "spark: first query, attempt $attempt: $query"
	if "${SPARK_HOME:-/opt/spark}/bin/spark-sql" -S -e "$query"; then
		echo "spark: ready; run queries with: docker compose exec spark /opt/spark/bin/spark-sql"
		[ -z "${SPARK_FIRST_QUERY_ONLY:-}" ] || exit 0
		break
	fi
	if [ "$attempt" -eq 40 ]; then echo "spark: the first query failed 40 times (see above); staying up for docker compose exec" >&2; fi
	sleep 5 & wait $!
done
sleep infinity & wait $!
