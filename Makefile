# pg2iceberg — see README.md.
GO ?= go

.PHONY: setup build static test test-long chaos trino partition race race-unit unit integration lint demo bench bench-ab clean

# Installs what is missing (idempotent; under a second when all is there).
# make test and make demo run it first, so on a fresh machine they are the
# only two commands.
setup:
	bash scripts/setup.sh

build:
	$(GO) build -o bin/pg2iceberg .

# The static binary the Dockerfile builds, with the same script.
static:
	bash scripts/build-static.sh

# Every package but integration: the unit tests.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /integration)
# Coverage: the counters of the unit tests and of every bridge process the
# integration tests start (built with -cover when PG2ICEBERG_COVERDIR is
# set, see integration/bridge_test.go) land under bin/cover.
COVERDIR = $(CURDIR)/bin/cover
COVERPKG = github.com/pg2iceberg/pg2iceberg/...

# Unit tests of the pure packages, then the end-to-end tests against a
# throwaway PostgreSQL, versitygw and real readers, after setup and a check
# of docker-compose.yml. The interop suite's reader x check table is printed
# at the end, then the coverage of every package, unit and integration
# tests merged. The heavy tests run in a short form (see test-long).
test: setup build
	$(GO) vet ./...
	$(GO) vet -tags failpoints ./...
	bash scripts/check-compose.sh
	rm -rf bin/interop-report.txt bin/chaos-report.txt $(COVERDIR)
	mkdir -p $(COVERDIR)/unit $(COVERDIR)/bridge
	PG2ICEBERG_INTEROP_REPORT=$(CURDIR)/bin/interop-report.txt PG2ICEBERG_CHAOS_REPORT=$(CURDIR)/bin/chaos-report.txt \
		PG2ICEBERG_COVERDIR=$(COVERDIR)/bridge PG2ICEBERG_RACE_TESTS='^($(RACE_TESTS))$$' \
		$(GO) test -count=1 -timeout 60m -parallel 8 -cover -coverpkg=$(COVERPKG) ./... -args -test.gocoverdir=$(COVERDIR)/unit
	@if [ -f bin/interop-report.txt ]; then cat bin/interop-report.txt; fi
	@if [ -f bin/chaos-report.txt ]; then cat bin/chaos-report.txt; fi
	@echo "coverage (unit and integration tests):"
	@$(GO) tool covdata percent -i=$(COVERDIR)/unit,$(COVERDIR)/bridge
	$(MAKE) race-unit

# The race detector over the packages that run goroutines of their own
# (the pure decoding, mapping and Parquet packages have none and take
# minutes under -race), then a few integration tests whose bridge is built
# with -race: streaming with a crash and restart, a streamed transaction
# applied ahead, the parallel copy. make test runs the packages
# (race-unit) and, in its run of every integration test, has those tests'
# bridges built with -race (PG2ICEBERG_RACE_TESTS); make race runs both
# on their own.
RACE_PKGS = . ./bridge ./iceberg/... ./replication ./tiering
RACE_TESTS = TestMixedWorkloadLocal|TestCrashMidBatch|TestStreamedTransactionAhead|TestBackfillUnderLoadWithKill
race-unit:
	$(GO) test -count=1 -race $(RACE_PKGS)

race: race-unit
	PG2ICEBERG_RACE=1 $(GO) test -count=1 -timeout 20m -parallel 4 -run '^($(RACE_TESTS))$$' ./integration/

# A network partition below the sockets (iptables drops what a dialed
# connection sends, on one loopback port): the bridge's connections to
# PostgreSQL fail within about a minute (replication/dial.go). Needs root
# and iptables, so not part of make test; about 65 s.
partition:
	$(GO) test -count=1 -tags partition -run '^TestDialNoticesPartition$$' -v ./replication/

# Trino, the fifth reader, opt-in (an 821 MB download): scripts/setup.sh
# --trino fetches trino-server and trino-cli, then Trino's iceberg
# connector reads the mirrors through the served catalog over TLS and
# OAuth2, the consistent cut, and a format v3 mirror
# (integration/trino_test.go, build tag trino).
trino: build
	bash scripts/setup.sh --trino
	$(GO) test -count=1 -timeout 20m -tags trino -run '^TestTrino' -v ./integration/

# The integration tests with the heavy ones at full size (PG2ICEBERG_LONG=1:
# the 5,000,000-row backfill, the 1,000,000-row transaction, ...; see size
# in integration/bridge_test.go); not part of make test.
test-long: setup build
	PG2ICEBERG_LONG=1 $(GO) test -count=1 -timeout 60m ./integration/

# The randomized crash driver at full size (integration/chaos_random_test.go):
# SEEDS seeds (default 200) of a random workload with a crash at a random
# failpoint or a SIGKILL at a random moment, again and again, each ending
# with the mirrors and changelogs checked; the summary (seeds, failpoints
# armed and hit, failed seeds) is printed and kept in bin/chaos-report.txt.
# make test runs 3 seeds. One seed: make chaos SEED=17.
SEEDS ?= 200
chaos: setup build
	PG2ICEBERG_CHAOS_SEEDS=$(SEEDS) PG2ICEBERG_CHAOS_SEED=$(SEED) PG2ICEBERG_CHAOS_REPORT=$(CURDIR)/bin/chaos-report.txt \
		$(GO) test -count=1 -timeout 240m -parallel 3 -run '^TestCrashRandom$$' ./integration/ ; \
		status=$$?; cat bin/chaos-report.txt 2>/dev/null; exit $$status

unit:
	$(GO) test -count=1 $(UNIT_PKGS)

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...
	$(GO) vet -tags failpoints ./...

# Starts a throwaway Postgres with a small shop schema and a write load, runs
# the bridge into ./warehouse and prints what the Iceberg tables hold.
demo: setup build
	$(GO) run ./integration/demo

clean:
	rm -rf bin warehouse

# Measures the bridge against PostgreSQL's own logical decoding (pg_recvlogical)
# on the same WAL, to a local warehouse and to S3; not part of make test.
# BENCHFLAGS=-quick for a run of about two minutes (see bench/README.md).
bench: build
	$(GO) run ./bench $(BENCHFLAGS)

# Two builds of the bridge in alternating runs: make bench-ab AB=HEAD~1,HEAD
# BENCHFLAGS="-workloads update -targets local" (see bench/README.md).
bench-ab:
	$(GO) run ./bench -ab $(AB) $(BENCHFLAGS)

