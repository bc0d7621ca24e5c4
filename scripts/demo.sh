#!/usr/bin/env bash
# The project's main job (README "Run the demo"): the heterogeneous MLP demo. A Relax program
# (examples/relax/hetero_mlp.py) normalises its input on the host VDevice (llvm), runs both dense
# layers on the GPU VDevice (vulkan, through wgpu; Mesa's lavapipe when there is no hardware GPU),
# moves the activations with R.to_vdevice, prints the per-device kernel time and the copies made,
# and checks the result against a host-only run. Without any GPU adapter it says so and runs
# everything on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg -s mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null; }; then
    echo "note: could not install Mesa's lavapipe (mesa-vulkan-drivers); the demo falls back to the host if no GPU adapter exists" >&2
  fi
fi
export NODEVICE_SELECT=1
cargo run --release --example hetero_mlp -- "$@"
