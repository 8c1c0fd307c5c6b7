#!/usr/bin/env bash
# Installs what pg2iceberg's tests need. Idempotent: run it as often as you
# like; it only installs what is missing.
#   - PostgreSQL server binaries (Debian's postgresql package) and PostGIS
#     for that server (postgresql-<major>-postgis-3)
#   - versitygw v1.8.0, a local S3 gateway (go install)
#   - toxiproxy v2.5.0, a fault-injecting TCP proxy (go install), as
#     toxiproxy-server
#   - Python readers: pyiceberg + pyarrow, duckdb + its iceberg extension,
#     pyspark
#   - Java 17 and Maven (apt-get), and the iceberg-spark-runtime jar matching
#     pyspark (Maven Central), for the interop suite's Spark SQL reader. The
#     jar is kept in $PG2ICEBERG_CACHE_DIR (default ~/.cache/pg2iceberg)/jars,
#     linked as iceberg-spark-runtime.jar.
#   - Apache Iceberg's REST catalog server from its test fixtures
#     (org.apache.iceberg:iceberg-open-api:1.10.1:test-fixtures) with its
#     runtime classpath (scripts/rest-fixture/pom.xml), in
#     $PG2ICEBERG_CACHE_DIR/jars/rest-fixture, for the REST write-target tests
#   - docker-compose (Debian's 1.29), which scripts/check-compose.sh uses to
#     validate docker-compose.yml; no Docker engine is needed or installed
#   - with --trino only (opt-in: an 821 MB download, a minute here, kept by
#     Maven in ~/.m2 as well, and 900 MB unpacked, three minutes on a busy
#     machine): io.trino:trino-server and trino-cli from Maven
#     Central, unpacked in $PG2ICEBERG_CACHE_DIR/trino/server, for the Trino
#     reader (make trino); Trino needs Java 24 or newer
set -euo pipefail

WITH_TRINO=
for arg in "$@"; do
	case "$arg" in
	--trino) WITH_TRINO=1 ;;
	*) printf 'ERROR: unknown argument %s: the only option is --trino\n' "$arg" >&2; exit 2 ;;
	esac
done

VERSITYGW_VERSION=v1.8.0
TOXIPROXY_VERSION=v2.5.0 # keep in step with harness.ToxiproxyVersion
PYICEBERG_VERSION=0.12.0
PYARROW_VERSION=26.0.1
DUCKDB_VERSION=1.4.4
DUCKDB_EXT_VERSION=1.4.4.20260205
PYTZ_VERSION=2026.6
# pyspark and the Iceberg runtime built for its Spark (3.5) and Scala (2.12).
PYSPARK_VERSION=3.5.9
ICEBERG_SPARK_RUNTIME=org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1
# The PostgreSQL JDBC driver, for Spark's JdbcCatalog on the bridge's
# Postgres SQL catalog (the outside-writer tests).
POSTGRES_JDBC=org.postgresql:postgresql:42.7.8
MAVEN_DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# Trino (--trino): the server tarball and the CLI, and the Java it runs on.
TRINO_VERSION=476
TRINO_JAVA_HOME=${PG2ICEBERG_TRINO_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
CACHE_DIR=${PG2ICEBERG_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pg2iceberg}

say() { printf '==> %s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "not root and sudo is missing: run this script as root"
	SUDO=(sudo)
fi

# ---------------------------------------------------------------- postgres
find_pg_bindir() {
	local d
	if [ -n "${PG2ICEBERG_PG_BINDIR:-}" ] && [ -x "$PG2ICEBERG_PG_BINDIR/initdb" ]; then
		echo "$PG2ICEBERG_PG_BINDIR"; return 0
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -rn); do
		if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
	done
	if command -v initdb >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"; return 0
	fi
	return 1
}

if PG_BINDIR=$(find_pg_bindir); then
	say "postgresql server binaries found in $PG_BINDIR"
else
	command -v apt-get >/dev/null 2>&1 || die "no postgresql server binaries (initdb) and no apt-get: install postgresql 15+ with your package manager, or set PG2ICEBERG_PG_BINDIR to its bin dir"
	say "installing postgresql with apt-get (Debian's package)"
	# Do not let the package create and start a 'main' cluster on port
	# 5432: the tests start their own throw-away servers.
	"${SUDO[@]}" mkdir -p /etc/postgresql-common/createcluster.d
	if [ ! -e /etc/postgresql-common/createcluster.d/pg2iceberg.conf ]; then
		echo "create_main_cluster = false" | "${SUDO[@]}" tee /etc/postgresql-common/createcluster.d/pg2iceberg.conf >/dev/null
	fi
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	PG_BINDIR=$(find_pg_bindir) || die "apt-get installed postgresql but initdb is still missing: look under /usr/lib/postgresql"
	say "postgresql server binaries installed in $PG_BINDIR"
fi

# PostGIS for the type matrix's geometry and geography columns: Debian's
# package built for the server found above (postgresql-15-postgis-3 for 15).
PG_MAJOR=$("$PG_BINDIR/postgres" --version | sed -n 's/.*(PostgreSQL) \([0-9][0-9]*\).*/\1/p')
[ -n "$PG_MAJOR" ] || die "cannot tell the major version of $PG_BINDIR/postgres from '$("$PG_BINDIR/postgres" --version)'"
PG_SHAREDIR=$("$PG_BINDIR/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$PG_MAJOR")
POSTGIS_PKG="postgresql-$PG_MAJOR-postgis-3"
if [ -f "$PG_SHAREDIR/extension/postgis.control" ]; then
	say "postgis found in $PG_SHAREDIR/extension"
else
	command -v apt-get >/dev/null 2>&1 || die "postgis is missing from $PG_SHAREDIR/extension and there is no apt-get: install PostGIS 3 for PostgreSQL $PG_MAJOR with your package manager"
	say "installing $POSTGIS_PKG with apt-get (Debian's PostGIS for PostgreSQL $PG_MAJOR)"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$POSTGIS_PKG" >/dev/null ||
		die "apt-get could not install $POSTGIS_PKG (see above): check 'apt-cache policy $POSTGIS_PKG'"
	[ -f "$PG_SHAREDIR/extension/postgis.control" ] || die "apt-get installed $POSTGIS_PKG but $PG_SHAREDIR/extension/postgis.control is still missing"
fi

# PostgreSQL refuses to run as root; the harness then runs it as 'postgres'.
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
	say "creating the 'postgres' os user (the harness runs the server as it when tests run as root)"
	useradd --system --user-group --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
fi

# --------------------------------------------------------------- versitygw
command -v go >/dev/null 2>&1 || die "go is missing: install Go 1.26+ (https://go.dev/doc/install) and rerun"
GOBIN_DIR=$(go env GOBIN)
[ -n "$GOBIN_DIR" ] || GOBIN_DIR="$(go env GOPATH | cut -d: -f1)/bin"

find_versitygw() {
	local p
	for p in "$(command -v versitygw 2>/dev/null || true)" "$GOBIN_DIR/versitygw" "${HOME:-/root}/go/bin/versitygw"; do
		if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; return 0; fi
	done
	return 1
}

if VGW=$(find_versitygw); then
	say "versitygw found at $VGW"
else
	say "building versitygw $VERSITYGW_VERSION with go install (takes about 2 minutes)"
	go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	VGW=$(find_versitygw) || die "go install finished but versitygw is not in $GOBIN_DIR: check 'go env GOBIN GOPATH'"
	say "versitygw installed at $VGW"
fi

# --------------------------------------------------------------- toxiproxy
# The network-fault tests put toxiproxy between the bridge and Postgres or
# S3. Its command is named "server"; it is installed as toxiproxy-server.
find_toxiproxy() {
	local p
	for p in "$(command -v toxiproxy-server 2>/dev/null || true)" "$GOBIN_DIR/toxiproxy-server" "${HOME:-/root}/go/bin/toxiproxy-server"; do
		if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; return 0; fi
	done
	return 1
}

if TOXI=$(find_toxiproxy); then
	say "toxiproxy-server found at $TOXI"
else
	say "building toxiproxy $TOXIPROXY_VERSION with go install (about a minute)"
	TOXI_TMP=$(mktemp -d)
	GOBIN="$TOXI_TMP" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" ||
		die "go install of toxiproxy $TOXIPROXY_VERSION failed (see above): check the Go module proxy ('go env GOPROXY')"
	mkdir -p "$GOBIN_DIR"
	mv "$TOXI_TMP/server" "$GOBIN_DIR/toxiproxy-server"
	rmdir "$TOXI_TMP"
	TOXI=$(find_toxiproxy) || die "toxiproxy-server was moved to $GOBIN_DIR but is not found there: check 'go env GOBIN GOPATH'"
	say "toxiproxy-server installed at $TOXI"
fi

# ------------------------------------------------------------------ python
command -v python3 >/dev/null 2>&1 || {
	command -v apt-get >/dev/null 2>&1 || die "python3 is missing: install python 3.9+"
	say "installing python3 with apt-get"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip >/dev/null
}
# ensure_pip installs pip on the first pip_install of a run (checking for it
# costs a second, so a run with everything installed does not).
PIP_CHECKED=
ensure_pip() {
	[ -z "$PIP_CHECKED" ] || return 0
	PIP_CHECKED=1
	python3 -m pip --version >/dev/null 2>&1 && return 0
	command -v apt-get >/dev/null 2>&1 || die "python3 has no pip: install pip for $(command -v python3)"
	say "installing python3-pip with apt-get"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
}

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# pip_install installs pinned packages; on a distro python that refuses
# (PEP 668 "externally managed"), it retries with --break-system-packages.
pip_install() {
	local log
	ensure_pip
	log=$(mktemp)
	if python3 -m pip install -q "$@" >"$log" 2>&1; then rm -f "$log"; return 0; fi
	if grep -q externally-managed "$log"; then
		if python3 -m pip install -q --break-system-packages "$@" >"$log" 2>&1; then rm -f "$log"; return 0; fi
	fi
	cat "$log" >&2
	rm -f "$log"
	return 1
}

# PYV holds the installed version of each Python distribution the tests use
# ("-" when missing), read in one python3 start: the shim and interpreter
# start-up are most of what a run with everything installed costs.
PY_DISTS=(pyiceberg pyarrow sqlalchemy duckdb duckdb-ext-iceberg duckdb-ext-avro duckdb-ext-httpfs pytz pyspark)
declare -A PYV
load_pyv() {
	local name v
	while read -r name v; do PYV[$name]=$v; done < <(python3 - "${PY_DISTS[@]}" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
print("python", f"{sys.version.split()[0]} ({sys.executable})")
for name in sys.argv[1:]:
    try:
        print(name, version(name))
    except PackageNotFoundError:
        print(name, "-")
EOF
	)
}
load_pyv

# py_has succeeds if every name==version pair is installed.
py_has() {
	local pair
	for pair; do
		[ "${PYV[${pair%%==*}]:-}" = "${pair#*==}" ] || return 1
	done
}

if py_has "pyiceberg==$PYICEBERG_VERSION" "pyarrow==$PYARROW_VERSION" && [ "${PYV[sqlalchemy]:-}" != - ]; then
	say "pyiceberg $PYICEBERG_VERSION and pyarrow $PYARROW_VERSION already installed"
else
	say "installing pyiceberg[sql-sqlite,pyarrow]==$PYICEBERG_VERSION and pyarrow==$PYARROW_VERSION with pip"
	pip_install "pyiceberg[sql-sqlite,pyarrow]==$PYICEBERG_VERSION" "pyarrow==$PYARROW_VERSION" ||
		die "pip could not install pyiceberg/pyarrow (see above): check that PyPI is reachable and python3 is 3.9+"
	load_pyv
fi

# The duckdb-ext-* wheels ship extension files for one duckdb version; the
# iceberg extension needs avro (manifests) and httpfs (s3); duckdb's python
# client needs pytz to return timestamptz values.
DUCKDB_INSTALLED=
DUCKDB_PKGS=("duckdb==$DUCKDB_VERSION" "duckdb-ext-iceberg==$DUCKDB_EXT_VERSION"
	"duckdb-ext-avro==$DUCKDB_EXT_VERSION" "duckdb-ext-httpfs==$DUCKDB_EXT_VERSION" "pytz==$PYTZ_VERSION")
if py_has "${DUCKDB_PKGS[@]}"; then
	say "duckdb $DUCKDB_VERSION and its iceberg extension already installed"
else
	say "installing duckdb $DUCKDB_VERSION and its iceberg/avro/httpfs extensions with pip (optional)"
	pip_install "${DUCKDB_PKGS[@]}" ||
		die "pip could not install duckdb and its extensions (see above); the interop suite reads with them"
	DUCKDB_INSTALLED=1
	load_pyv
fi

if py_has "pyspark==$PYSPARK_VERSION"; then
	say "pyspark $PYSPARK_VERSION already installed"
else
	say "installing pyspark==$PYSPARK_VERSION with pip (about 320 MB)"
	pip_install "pyspark==$PYSPARK_VERSION" || die "pip could not install pyspark (see above): check that PyPI is reachable"
	load_pyv
fi

# ------------------------------------------------------------ java, spark jar
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "$1 is missing and there is no apt-get: install $2 with your package manager"
	say "installing $2 with apt-get"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
JAVA_VERSION=$(java -version 2>&1 | head -1 || true)
java_major=$(printf '%s\n' "$JAVA_VERSION" | sed -n 's/.*version "\([0-9]*\).*/\1/p')
if ! command -v java >/dev/null 2>&1 || [ "${java_major:-0}" -lt 17 ]; then
	apt_install "java 17+" openjdk-17-jre-headless
	JAVA_VERSION=$(java -version 2>&1 | head -1)
fi
command -v mvn >/dev/null 2>&1 || apt_install mvn maven

IFS=: read -r RT_GROUP RT_ARTIFACT RT_VERSION <<<"$ICEBERG_SPARK_RUNTIME"
JAR_DIR="$CACHE_DIR/jars"
JAR="$JAR_DIR/$RT_ARTIFACT-$RT_VERSION.jar"
if [ -s "$JAR" ]; then
	say "$RT_ARTIFACT $RT_VERSION found at $JAR"
else
	say "fetching $ICEBERG_SPARK_RUNTIME from Maven Central into $JAR_DIR"
	mkdir -p "$JAR_DIR"
	mvn -q -B -Dstyle.color=never --strict-checksums "$MAVEN_DEPENDENCY_PLUGIN:copy" -Dartifact="$ICEBERG_SPARK_RUNTIME" -DoutputDirectory="$JAR_DIR" ||
		die "maven could not fetch $ICEBERG_SPARK_RUNTIME (see above): check that Maven Central is reachable"
	[ -s "$JAR" ] || die "maven finished but $JAR is missing"
fi
ln -sfn "$(basename "$JAR")" "$JAR_DIR/iceberg-spark-runtime.jar"

# fetch_jar COORDINATE LINK: the jar of a Maven coordinate into $JAR_DIR
# (once), linked as LINK.
fetch_jar() {
	local group artifact version jar
	IFS=: read -r group artifact version <<<"$1"
	jar="$JAR_DIR/$artifact-$version.jar"
	if [ -s "$jar" ]; then
		say "$artifact $version found at $jar"
	else
		say "fetching $1 from Maven Central into $JAR_DIR"
		mvn -q -B -Dstyle.color=never --strict-checksums "$MAVEN_DEPENDENCY_PLUGIN:copy" -Dartifact="$1" -DoutputDirectory="$JAR_DIR" ||
			die "maven could not fetch $1 (see above): check that Maven Central is reachable"
		[ -s "$jar" ] || die "maven finished but $jar is missing"
	fi
	ln -sfn "$(basename "$jar")" "$JAR_DIR/$2"
}
fetch_jar "$POSTGRES_JDBC" postgresql-jdbc.jar

# The REST fixture server's classpath: resolved once; the marker holds the
# pom's checksum, so a changed pom resolves again.
REST_FIXTURE_POM="$(cd "$(dirname "$0")" && pwd)/rest-fixture/pom.xml"
REST_FIXTURE_DIR="$JAR_DIR/rest-fixture"
REST_FIXTURE_SUM=$(sha256sum "$REST_FIXTURE_POM" | cut -d' ' -f1)
if [ "$(cat "$REST_FIXTURE_DIR/.resolved" 2>/dev/null)" = "$REST_FIXTURE_SUM" ]; then
	say "iceberg REST fixture server found in $REST_FIXTURE_DIR"
else
	say "fetching the iceberg REST fixture server and its classpath from Maven Central into $REST_FIXTURE_DIR"
	rm -rf "$REST_FIXTURE_DIR"
	mkdir -p "$REST_FIXTURE_DIR"
	mvn -q -B -Dstyle.color=never --strict-checksums -f "$REST_FIXTURE_POM" "$MAVEN_DEPENDENCY_PLUGIN:copy-dependencies" \
		-DincludeScope=runtime -DoutputDirectory="$REST_FIXTURE_DIR" ||
		die "maven could not resolve $REST_FIXTURE_POM (see above): check that Maven Central is reachable"
	[ -s "$REST_FIXTURE_DIR/iceberg-open-api-1.10.1-test-fixtures.jar" ] || die "maven finished but the REST fixture jar is missing from $REST_FIXTURE_DIR"
	echo "$REST_FIXTURE_SUM" >"$REST_FIXTURE_DIR/.resolved"
fi

# ---------------------------------------------------------- docker-compose
# scripts/check-compose.sh validates docker-compose.yml with it (no engine
# needed): Debian's docker-compose 1.29, unless Compose v2 is there.
# (`docker-compose version` takes a second: the path is shown instead.)
if command -v docker-compose >/dev/null 2>&1; then
	COMPOSE_VERSION=$(command -v docker-compose)
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
	COMPOSE_VERSION="docker compose $(docker compose version --short)"
else
	apt_install docker-compose docker-compose
	COMPOSE_VERSION=$(command -v docker-compose)
fi

# ------------------------------------------------------------ trino (opt-in)
TRINO_DIR="$CACHE_DIR/trino"
if [ -n "$WITH_TRINO" ]; then
	"$TRINO_JAVA_HOME/bin/java" -version >/dev/null 2>&1 ||
		die "Trino $TRINO_VERSION needs Java 24 or newer: none at $TRINO_JAVA_HOME; set PG2ICEBERG_TRINO_JAVA_HOME to one"
	if [ ! -x "$TRINO_DIR/server/bin/launcher" ] || [ "$(cat "$TRINO_DIR/server/.version" 2>/dev/null)" != "$TRINO_VERSION" ]; then
		say "fetching trino-server $TRINO_VERSION (821 MB) and trino-cli with maven"
		mkdir -p "$TRINO_DIR"
		for a in "io.trino:trino-server:$TRINO_VERSION:tar.gz" "io.trino:trino-cli:$TRINO_VERSION:jar:executable"; do
			mvn -q -B -Dstyle.color=never --strict-checksums "$MAVEN_DEPENDENCY_PLUGIN:copy" -Dartifact="$a" -DoutputDirectory="$TRINO_DIR" ||
				die "maven could not fetch $a (see above): check that Maven Central is reachable"
		done
		rm -rf "$TRINO_DIR/server" "$TRINO_DIR/trino-server-$TRINO_VERSION"
		# The tarball hard-links jars across plugins: unpack it whole.
		tar xzf "$TRINO_DIR/trino-server-$TRINO_VERSION.tar.gz" -C "$TRINO_DIR"
		mv "$TRINO_DIR/trino-server-$TRINO_VERSION" "$TRINO_DIR/server"
		rm -f "$TRINO_DIR/trino-server-$TRINO_VERSION.tar.gz"
		chmod +x "$TRINO_DIR/trino-cli-$TRINO_VERSION-executable.jar"
		echo "$TRINO_VERSION" >"$TRINO_DIR/server/.version"
	fi
	TRINO_CLI_VERSION=$(PATH="$TRINO_JAVA_HOME/bin:$PATH" "$TRINO_DIR/trino-cli-$TRINO_VERSION-executable.jar" --version 2>&1) ||
		die "trino-cli does not run on $TRINO_JAVA_HOME: $TRINO_CLI_VERSION"
fi

# ---------------------------------------------------------------- summary
say "available tools:"
echo "  postgres:   $("$PG_BINDIR/postgres" --version) ($PG_BINDIR)"
echo "  versitygw:  $VGW ($VERSITYGW_VERSION when built by this script)"
echo "  toxiproxy:  $TOXI ($TOXIPROXY_VERSION when built by this script)"
echo "  go:         $(go version)"
echo "  java:       $JAVA_VERSION"
echo "  compose:    $COMPOSE_VERSION (validates docker-compose.yml only)"
echo "  spark jar:  $JAR_DIR/iceberg-spark-runtime.jar -> $(basename "$JAR")"
echo "  jdbc jar:   $JAR_DIR/postgresql-jdbc.jar -> $(readlink "$JAR_DIR/postgresql-jdbc.jar")"
echo "  rest fixture: $REST_FIXTURE_DIR ($(ls "$REST_FIXTURE_DIR"/*.jar | wc -l) jars)"
[ -z "$WITH_TRINO" ] || echo "  trino:      $TRINO_DIR/server ($TRINO_VERSION), $TRINO_CLI_VERSION, on $TRINO_JAVA_HOME"
echo "  python:     ${PYV[python]}"
for name in pyiceberg pyarrow sqlalchemy duckdb duckdb-ext-iceberg pytz pyspark; do
	v=${PYV[$name]:--}
	printf '  %-20s%s\n' "$name:" "${v/#-/not installed}"
done
# Loading DuckDB's extensions offline takes about a second: checked when
# this run installed them.
if [ -n "$DUCKDB_INSTALLED" ]; then
	python3 - <<'EOF'
try:
    import os, duckdb, duckdb_ext
    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False})
    for ext in ("avro", "httpfs", "iceberg"):
        con.load_extension(ext)
    print("  duckdb iceberg extension: loads offline")
except Exception as e:  # optional reader
    print(f"  duckdb iceberg extension: unavailable ({type(e).__name__})")
EOF
fi
say "setup done"
