#!/usr/bin/env bash
# The project's test command (README "Run the tests"): software Vulkan (lavapipe) for the GPU tests,
# `cargo fmt --check`, `cargo clippy -D warnings`, then the whole workspace's tests. Reads the TVM
# corpus from ../shared/corpus/tvm when present.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg -s mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi
export NODEVICE_SELECT=1
# The persistent GPU kernel cache of `relax run` in a fresh folder: no test reads
# entries of an earlier run or writes to the user's cache folder.
RELAX_CACHE_DIR="$(mktemp -d)"
export RELAX_CACHE_DIR
trap 'rm -rf "$RELAX_CACHE_DIR"' EXIT
# Formatting and lints first: they are cheap and fail fast.
for c in rustfmt clippy; do
  cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$c"
done
cargo fmt --all --check 2>&1
cargo clippy --workspace --all-targets --release -- -D warnings 2>&1
cargo test --workspace --release 2>&1
