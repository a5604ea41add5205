#!/usr/bin/env bash
# Fetches Iceberg's Spark 3.5 runtime jar from Maven Central into a gitignored cache.
# Falls back to the jar shipped in the PyPI package snowpark-connect-deps-iceberg when Maven is missing.
set -euo pipefail
version=${1:-1.10.0}
dir=${2:-.cache/jars}
jar="iceberg-spark-runtime-3.5_2.12-${version}.jar"
mkdir -p "$dir"
if command -v mvn >/dev/null; then
  mvn -q dependency:copy -Dartifact="org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:${version}" \
      -DoutputDirectory="$dir" && [ -f "$dir/$jar" ] && exit 0
fi
echo "Maven unavailable or failed; using the PyPI fallback (iceberg-spark-runtime 1.9.2)" >&2
tmp=$(mktemp -d)
python3 -m pip download --quiet --no-deps -d "$tmp" "snowpark-connect-deps-iceberg==1.0.1"
python3 - "$tmp" "$dir/$jar" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("iceberg-spark-runtime-3.5_2.12-1.9.2.jar"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
