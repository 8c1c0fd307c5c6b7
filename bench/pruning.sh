#!/bin/sh
# Files planned for a one-day query on a mirror partitioned by
# day(created_at) against the same rows unpartitioned (10 flushes of 3000
# rows over 30 days each), as pg2iceberg inspect --where reports them: runs
# integration's TestDayPartitionPruning and prints its figures. Needs what
# the integration tests need (scripts/setup.sh).
set -e
cd "$(dirname "$0")/.."
go test -count=1 -run 'TestDayPartitionPruning$' ./integration/ -v | grep 'one-day query'
