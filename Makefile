# pg2iceberg — see README.md.
GO ?= go

.PHONY: build test unit integration lint demo bench clean

build:
	$(GO) build -o bin/pg2iceberg .

# Unit tests of the pure packages, then the end-to-end tests against a
# throwaway PostgreSQL, versitygw and real readers (run scripts/setup.sh first).
test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

unit:
	$(GO) test -count=1 ./decode/ ./mapping/ ./iceberg/ ./replication/

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	$(GO) vet ./...

# Starts a throwaway Postgres with a small shop schema and a write load, runs
# the bridge into ./warehouse and prints what the Iceberg tables hold.
demo: build
	$(GO) run ./integration/demo

clean:
	rm -rf bin warehouse
