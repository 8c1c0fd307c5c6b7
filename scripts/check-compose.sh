#!/usr/bin/env bash
# Checks docker-compose.yml (or the file named) without a Docker engine
# (make test runs it):
#   - `docker-compose config` (Debian's docker-compose 1.29, which
#     scripts/setup.sh installs; `docker compose` v2 where that is what
#     there is) parses and validates the file;
#   - every image, and every base image of the Dockerfile, is pinned by a
#     version tag (no :latest, no bare name), except the one the stack
#     builds itself;
#   - every file the stack bind-mounts or takes a secret from exists.
# It pulls, builds and starts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-docker-compose.yml}

if command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose -f "$file")
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
	compose=(docker compose -f "$file")
else
	echo "check-compose: neither docker-compose nor docker compose is installed: run scripts/setup.sh" >&2
	exit 1
fi
config=$("${compose[@]}" config)

fail=0
# Image lines of the resolved file, and the services that build theirs.
while read -r image; do
	tag=${image##*:}
	if [ "$tag" = "$image" ] || [ "$tag" = latest ] || ! [[ $tag =~ [0-9] ]]; then
		echo "check-compose: image $image is not pinned by a version tag" >&2
		fail=1
	fi
done < <(printf '%s\n' "$config" | awk '
	/^  [a-z0-9_-]+:$/ { svc = $1; build[svc] = 0 }
	/^    build:/ { build[svc] = 1 }
	/^    image:/ { image[svc] = $2 }
	END { for (s in image) if (!build[s]) print image[s] }')

# The Dockerfile's base images, the same rule (scratch and stages aside).
while read -r image; do
	tag=${image##*:}
	if [ "$tag" = "$image" ] || [ "$tag" = latest ] || ! [[ $tag =~ [0-9] ]]; then
		echo "check-compose: Dockerfile base image $image is not pinned by a version tag" >&2
		fail=1
	fi
done < <(awk 'toupper($1) == "FROM" && $2 != "scratch" { stage[$4] = 1; if (!($2 in stage)) print $2 }' Dockerfile)

# Bind mounts and secret files: absolute host paths in the resolved file.
while read -r path; do
	if [ ! -e "$path" ]; then
		echo "check-compose: $path (mounted or a secret in $file) does not exist" >&2
		fail=1
	fi
done < <(printf '%s\n' "$config" | awk '
	/^    [a-z_]+:/ { inv = ($1 == "volumes:") }
	inv && /^    - \// { split($2, p, ":"); if (p[2] != "") print p[1] }
	/^    file: \// { print $2 }')

[ "$fail" -eq 0 ] || exit 1
echo "check-compose: $file is valid ($("${compose[@]}" version --short 2>/dev/null || echo compose)); images pinned, mounted files present"
