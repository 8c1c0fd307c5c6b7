#!/usr/bin/env bash
# The compose stack's write load: runs load.sql (one small transaction)
# every LOAD_PAUSE seconds (default 1), LOAD_ITERATIONS times (default 0:
# until stopped). The connection comes from the libpq variables (PGHOST,
# PGUSER, PGPASSWORD, PGDATABASE).
set -euo pipefail
sql="$(dirname "$0")/load.sql"
pause=${LOAD_PAUSE:-1}
iterations=${LOAD_ITERATIONS:-0}
i=0
trap 'echo "load: stopped after $i transactions"; exit 0' INT TERM
echo "load: a transaction every ${pause}s against ${PGHOST:-localhost}/${PGDATABASE:-}"
while [ "$iterations" -eq 0 ] || [ "$i" -lt "$iterations" ]; do
	psql -X -q -v ON_ERROR_STOP=1 -f "$sql"
	i=$((i + 1))
	if [ $((i % 60)) -eq 0 ]; then echo "load: $i transactions"; fi
	if [ "$iterations" -eq 0 ] || [ "$i" -lt "$iterations" ]; then sleep "$pause" & wait $!; fi
done
echo "load: done, $i transactions"
