#!/usr/bin/env bash
# Steady-state per-inference latency of real networks: ours on the host and on the GPU,
# ONNX Runtime (CPU) and TVM's `tvm.compile(mod, target="llvm")`, measured in one run,
# with each column's ratio to ONNX Runtime and the achieved GFLOP/s; then, for the GPU,
# the network ratio: achieved GFLOP/s over the hand 8x8 register-tiled matmul's
# (shaders/matmul_8x8.wgsl) timed on the same adapter in the same run, and the
# first-inference time (JIT plus pipeline creation plus weight upload).
#
# Usage: scripts/bench_models.sh [DIR] [--python PY] [--repeat N] [--budget-s S] [--model NAME]...
#   DIR        a directory made by prep.py (<DIR>/<name>/{prog.py,model.onnx,in*.npy});
#              default $RELAX_REALMODELS_DIR. Transformer case directories (the transformer
#              generator's meta.json layout) time too: `--model hf_bert_base_onnx`; their
#              ONNX Runtime/torch columns come from scripts/bench_transformers.py
#   --python   an interpreter with onnxruntime (and apache-tvm for the TVM column);
#              without one those columns are left out
#   --repeat   timed runs per cell at most (default 10), after one warm-up run
#   --budget-s stop timing a cell after this many seconds (at least one run; default 60)
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${RELAX_REALMODELS_DIR:-}"
py=""
repeat=10
budget=60
models=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) py="$2"; shift 2 ;;
        --repeat) repeat="$2"; shift 2 ;;
        --budget-s) budget="$2"; shift 2 ;;
        --model) models+=(--model "$2"); shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) dir="$1"; shift ;;
    esac
done
if [ -z "$dir" ]; then
    echo "error: give the prep.py directory as an argument or in RELAX_REALMODELS_DIR" >&2
    exit 2
fi

cargo build --release --example bench_models >&2
bin=target/release/examples/bench_models
results=$(mktemp)
trap 'rm -f "$results"' EXIT

for device in cpu gpu; do
    echo "timing ours --device $device ..." >&2
    "$bin" "$dir" --device "$device" --repeat "$repeat" --budget-s "$budget" ${models[@]+"${models[@]}"} >>"$results" || true
done
if [ -n "$py" ]; then
    echo "timing ONNX Runtime and TVM with $py ..." >&2
    "$py" scripts/bench_models.py "$dir" --repeat "$repeat" --budget-s "$budget" ${models[@]+"${models[@]}"} >>"$results" || true
else
    echo "note: no --python given: no ONNX Runtime or TVM columns" >&2
fi

echo
echo "Per-inference latency, median of the timed runs (warm-up excluded); (n) = runs timed;"
echo "x ORT = time / ONNX Runtime's time; GFLOP/s = 2 x multiply-adds of conv2d and matmul / time."
awk '
    $1 == "HAND" { hand[$2] = $3 }
    $1 == "RESULT" {
        key = $2 SUBSEP $3; ms[key] = $4; n[key] = $5
        if (NF >= 7) first[key] = $7
        if ($3 == "cpu" || $3 == "gpu") work[$2] = $6
        if (!($2 in seen)) { seen[$2] = 1; order[++count] = $2 }
    }
    END {
        split("cpu gpu ort tvm", cols, " ")
        split("ours-cpu ours-gpu onnxruntime tvm-llvm", names, " ")
        printf "%-11s %7s", "model", "GFLOP"
        for (c = 1; c <= 4; c++) printf "  %-34s", names[c] " ms (n), x ORT, GFLOP/s"
        printf "\n"
        for (i = 1; i <= count; i++) {
            m = order[i]
            printf "%-11s %7.3f", m, work[m]
            ort = ((m, "ort") in ms) ? ms[m, "ort"] : 0
            for (c = 1; c <= 4; c++) {
                k = m SUBSEP cols[c]
                if (!(k in ms)) { printf "  %-34s", "-"; continue }
                cell = sprintf("%.1f (%d)", ms[k], n[k])
                cell = cell ", " (ort > 0 ? sprintf("%.1fx", ms[k] / ort) : "-")
                cell = cell ", " (work[m] > 0 ? sprintf("%.2f", work[m] / (ms[k] / 1000)) : "-")
                printf "  %-34s", cell
            }
            printf "\n"
        }
        header = 0
        for (i = 1; i <= count; i++) {
            m = order[i]; k = m SUBSEP "gpu"
            if (!(k in ms) || ms[k] <= 0 || !(m in hand) || hand[m] <= 0) continue
            if (!header) {
                printf "\nNetwork ratio: ours-gpu GFLOP/s / the hand 8x8 WGSL matmul GFLOP/s (1024^3), timed on the same adapter right after\n"
                printf "%-11s %14s %14s %10s %20s\n", "model", "gpu GFLOP/s", "hand GFLOP/s", "x hand", "first inference ms"
                header = 1
            }
            g = work[m] / (ms[k] / 1000)
            printf "%-11s %14.3f %14.3f %10.3f %20.0f\n", m, g, hand[m], g / hand[m], first[k]
        }
    }
' "$results"
