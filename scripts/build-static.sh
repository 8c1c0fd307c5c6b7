#!/usr/bin/env bash
# Builds pg2iceberg as one static binary, the way the Dockerfile does (its
# build stage runs this script), and checks that it is static.
#   scripts/build-static.sh [OUTPUT]     (default bin/pg2iceberg-static)
# CGO_ENABLED=0 works because every dependency is pure Go: the SQLite
# catalog uses modernc.org/sqlite, not the cgo driver. -trimpath and the
# stripped symbol table make the binary smaller and its build reproducible.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin/pg2iceberg-static}
mkdir -p "$(dirname "$out")"

CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out" .

# Checked with `file` and `ldd` where they are installed (the golang image
# has ldd, not file), and with the build settings Go records in the binary.
if command -v file >/dev/null 2>&1; then
	desc=$(file -b "$out")
	case $desc in
	*"statically linked"*) ;;
	*) echo "build-static: $out is not statically linked: $desc" >&2; exit 1 ;;
	esac
fi
if command -v ldd >/dev/null 2>&1 && ldd "$out" >/dev/null 2>&1; then
	echo "build-static: ldd lists shared libraries for $out:" >&2
	ldd "$out" >&2
	exit 1
fi
if go version -m "$out" | grep -q 'CGO_ENABLED=1'; then
	echo "build-static: $out was built with cgo" >&2
	exit 1
fi
"$out" --help >/dev/null
echo "build-static: $out is static ($(du -h "$out" | cut -f1))"
