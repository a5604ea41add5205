#!/usr/bin/env bash
# Builds the Lakekeeper server that `make bench` compares Lakeledger against (bench/lakekeeper.py), once, into
# .cache/lakekeeper/bin. Lakekeeper is not on crates.io: its source comes from a git checkout or git dir that
# LAKELEDGER_LAKEKEEPER_SOURCE names (the one `make conformance-lakekeeper` reads), at the pinned commit.
# Its git dependencies cannot be reached from here, so they are replaced by the nearest releases on crates.io, with the
# small API shims of LAKEKEEPER_EDITS (../shared/lakekeeper-build/ has the recipe and why each is needed).
# 30-50 min on 2 cores, peak ~3 GB; run it when nothing else runs.
set -euo pipefail
commit=${LAKEKEEPER_COMMIT:-90892e9cc1b515826fe07d2e2797a5620ec3e613}
bin=${1:-.cache/lakekeeper/bin/lakekeeper-${commit:0:12}}
edits=${LAKEKEEPER_EDITS:-../shared/lakekeeper-build/lakekeeper-source-edits.diff}
work=.cache/lakekeeper/build
[ -x "$bin" ] && exit 0

fail() { echo "make bench-lakekeeper: $*" >&2; exit 1; }
source=${LAKELEDGER_LAKEKEEPER_SOURCE:-}
[ -n "$source" ] || fail "LAKELEDGER_LAKEKEEPER_SOURCE is not set: clone https://github.com/lakekeeper/lakekeeper (or \
copy a clone's .git) to a directory this machine can read and run
    LAKELEDGER_LAKEKEEPER_SOURCE=/path/to/lakekeeper make bench-lakekeeper"
git -C "$source" cat-file -e "$commit^{commit}" 2>/dev/null \
  || fail "$source holds no commit $commit: git -C $source fetch origin $commit"
[ -f "$edits" ] || fail "the source edits $edits are missing (LAKEKEEPER_EDITS names them)"
command -v cargo >/dev/null || fail "Rust's cargo is needed (rustup.rs)"

# bindgen (aws-lc-sys, zstd) needs libclang; the rest are the usual native build inputs
missing=$(for p in build-essential cmake pkg-config libssl-dev libclang-dev libpq-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  flock .cache/.apt.lock apt-get update -qq
  # shellcheck disable=SC2086
  flock .cache/.apt.lock apt-get install -y -qq $missing >/dev/null
fi

export CARGO_HOME=$PWD/.cache/cargo
rm -rf "$work"
mkdir -p "$work/src" "$work/deps" "$work/fetch/src" "$(dirname "$bin")"
git -C "$source" archive --format=tar "$commit" | tar -x -C "$work/src"

# The released crates that stand in for the git dependencies, unpacked by a throw-away project's `cargo fetch`
stand_ins=(async-nats@0.46.0 azure_core@0.21.0 azure_identity@0.21.0 azure_storage@0.21.0 azure_storage_blobs@0.21.0
           azure_storage_datalake@0.21.0 azure_svc_blobstorage@0.21.0 iceberg@0.10.0 limes@0.5.0)
{
  printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n'
  for c in "${stand_ins[@]}"; do printf '%s = { version = "=%s", default-features = false }\n' "${c%@*}" "${c#*@}"; done
} > "$work/fetch/Cargo.toml"
: > "$work/fetch/src/lib.rs"
cargo fetch --manifest-path "$work/fetch/Cargo.toml" -q
for c in "${stand_ins[@]}"; do
  found=$(ls -d "$CARGO_HOME"/registry/src/*/"${c%@*}-${c#*@}" | head -1)
  cp -r "$found" "$work/deps/"
done
# The console is an optional dependency of the `ui` feature, which is not built: an empty crate satisfies resolution
mkdir -p "$work/deps/lakekeeper-console/src"
printf '[package]\nname = "lakekeeper-console"\nversion = "0.21.0"\nedition = "2021"\n' \
  > "$work/deps/lakekeeper-console/Cargo.toml"
: > "$work/deps/lakekeeper-console/src/lib.rs"

sed -e 's#/DEPS/iceberg-rust-0.10.0/crates/iceberg/#/deps/iceberg-0.10.0/#' -e 's#/SRC/#/src/#' "$edits" \
  | patch -s -p1 -d "$work"
cat >> "$work/src/Cargo.toml" <<'EOF'

[patch."https://github.com/lakekeeper/nats.rs.git"]
async-nats = { path = "../deps/async-nats-0.46.0" }
[patch."https://github.com/lakekeeper/azure-sdk-for-rust.git"]
azure_core = { path = "../deps/azure_core-0.21.0" }
azure_identity = { path = "../deps/azure_identity-0.21.0" }
azure_storage = { path = "../deps/azure_storage-0.21.0" }
azure_storage_blobs = { path = "../deps/azure_storage_blobs-0.21.0" }
azure_storage_datalake = { path = "../deps/azure_storage_datalake-0.21.0" }
azure_svc_blobstorage = { path = "../deps/azure_svc_blobstorage-0.21.0" }
[patch."https://github.com/lakekeeper/iceberg-rust.git"]
iceberg = { path = "../deps/iceberg-0.10.0" }
[patch."https://github.com/vakamo-labs/limes-rs.git"]
limes = { path = "../deps/limes-0.5.0" }
[patch."https://github.com/lakekeeper/console"]
lakekeeper-console = { path = "../deps/lakekeeper-console" }
[patch.crates-io]
azure_core = { path = "../deps/azure_core-0.21.0" }
azure_identity = { path = "../deps/azure_identity-0.21.0" }
azure_storage = { path = "../deps/azure_storage-0.21.0" }
azure_storage_blobs = { path = "../deps/azure_storage_blobs-0.21.0" }
azure_svc_blobstorage = { path = "../deps/azure_svc_blobstorage-0.21.0" }
EOF

# rust-toolchain.toml pins a nightly; the stable toolchain builds it. Release profile as cargo's defaults, no LTO.
(cd "$work/src" && RUSTUP_TOOLCHAIN=stable SQLX_OFFLINE=true CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_TARGET_DIR="$PWD/../target" \
  nice -n 10 cargo build --release -q -p lakekeeper-bin --bin lakekeeper)
cp "$work/target/release/lakekeeper" "$bin.partial"
mv "$bin.partial" "$bin"
# the build tree (several GB) is not needed once the binary is out
rm -rf "$work"
echo "built $bin"
