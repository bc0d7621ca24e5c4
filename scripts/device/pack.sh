#!/usr/bin/env bash
# Prepare the GPU-machine benchmark (run.sh) on this machine: release binaries of
# bench_models, generate and relax (stripped, xz-compressed), the decoders' programs with
# TVM's reference tokens (scripts/gen_decoder.py; needs a Python with apache-tvm), and the
# Vulkan loader packages, all under OUT (default: devrun/, which must be git-ignored and
# carried to the machine beside .gl/ as the device notes describe).
#
# Usage: scripts/device/pack.sh [--python PY] [OUT]
# Then, on the GPU machine: bash scripts/device/run.sh OUT   (STEPS="mm r50" picks steps)
set -euo pipefail
cd "$(dirname "$0")/../.."
py=python3
out=devrun
while [ $# -gt 0 ]; do
    case "$1" in
        --python) py="$2"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) out="$1"; shift ;;
    esac
done
cargo build --release --workspace --all-targets >&2
mkdir -p "$out/bin"
rm -f "$out"/bin/*
for b in target/release/examples/bench_models target/release/examples/generate target/release/relax; do
    strip -o "$out/bin/$(basename "$b")" "$b"
done
xz -T0 -6 "$out"/bin/*
# The decoders: program, TVM's tokens, and the weights' names and shapes (the machine
# regenerates the same seeded weights instead of carrying them).
for spec in "dec100m float32" "dec100m16 float16"; do
    set -- $spec
    d="$out/$1"
    if [ ! -f "$d/prog.py" ]; then
        tmp=$(mktemp -d)
        "$py" scripts/gen_decoder.py "$tmp" --preset 100m --forward --dtype "$2" >&2
        mkdir -p "$d"
        cp "$tmp/prog.py" "$tmp/reference.json" "$d/"
        "$py" - "$tmp/params.npz" "$d/param_shapes.json" <<'PY'
import json, sys
import numpy as np
z = np.load(sys.argv[1])
json.dump({"seed": 0, "params": [[k, list(z[k].shape), str(z[k].dtype)] for k in z.files]}, open(sys.argv[2], "w"))
PY
        rm -rf "$tmp"
    fi
done
du -sh "$out" >&2
