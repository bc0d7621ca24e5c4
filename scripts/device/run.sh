#!/bin/bash
# The GPU benchmark on a lent GPU machine (see pack.sh): the engine's 4096^3 matmul, an
# ONNX ResNet-50 and BERT-base (imported by relax-onnx) on the GPU against ONNX Runtime
# on the same machine's CPU and torch on its GPU, the host runs of the same, and greedy
# decoding of the 88M f32 and f16 decoders against the GPU's copy bandwidth. Every
# output is checked against its reference (CHECK lines, "tokens match TVM's").
#
# Usage: bash scripts/device/run.sh [DIR]   (DIR: pack.sh's output, default devrun)
#        STEPS="prep mm r50 bert tune cpu cpuprof dec decprof dec16" picks and orders steps.
cd "$(dirname "$0")/../.."
dir=${1:-devrun}
if [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$nv" ]; then export VK_DRIVER_FILES=$nv __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json; fi
B=/tmp/bin; D=/tmp/d; mkdir -p $D $B
for f in "$dir"/bin/*.xz; do n=$(basename "$f" .xz); xz -dc "$f" > $B/$n; chmod +x $B/$n; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv 2>/dev/null
echo "cpus $(nproc)"; uname -r
step() { local lim=$1; shift; echo "== $* ($(date +%T))"; local s=$(date +%s%N); timeout "$lim" "$@"; local rc=$?; echo "== rc $rc in $(( ($(date +%s%N) - s) / 1000000 )) ms"; }
decoders=""
for d in dec100m dec100m16; do [ -f "$dir/$d/param_shapes.json" ] && decoders="$decoders decoder $dir/$d"; done
STEPS=${STEPS:-prep mm r50 bert cpu cpuprof dec decprof dec16}
for st in $STEPS; do case $st in
  prep) step 120 python3 scripts/device/prep.py $D mm 4096 resnet50 bert $decoders ;;
  mm) step 60 $B/bench_models $D --device gpu --model mm --hand-n 4096 --repeat 20 --profile ;;
  r50) step 90 $B/bench_models $D --device gpu --model resnet50 --hand-n 4096 --repeat 50 --budget-s 20
       step 60 $B/bench_models $D --device gpu --model resnet50 --repeat 3 --profile | sort -t' ' -k3 -g -r | head -25 ;;
  bert) step 90 $B/bench_models $D --device gpu --model bert --hand-n 4096 --repeat 30 --budget-s 20
        step 60 $B/bench_models $D --device gpu --model bert --repeat 3 --profile | sort -t' ' -k3 -g -r | head -25 ;;
  tune) for v in "RELAX_GPU_GEMM_THREADS=16x16" "RELAX_GPU_MIN_GEMM_GROUPS=128" "RELAX_GPU_MIN_GEMM_GROUPS=2048"; do
          echo "== variant $v"
          env $v timeout 60 $B/bench_models $D --device gpu --model mm --model resnet50 --model bert --hand-n 4096 --repeat 30 --budget-s 5 | grep "^RESULT\|^CHECK"
        done ;;
  cpu) step 60 $B/bench_models $D --device cpu --model resnet50 --model bert --repeat 10 --budget-s 8 ;;
  cpuprof) step 60 $B/relax run $D/resnet50/model.onnx --input $D/resnet50/in0000.npy --device cpu --repeat 5 --profile --output /tmp/r50.npy 2>&1 | head -45 ;;
  dec) [ -d "$dir/dec100m" ] && { step 90 $B/generate $dir/dec100m --device gpu --runs 3; step 60 $B/generate $dir/dec100m --device cpu --runs 2; } ;;
  decprof) [ -d "$dir/dec100m" ] && step 60 $B/generate $dir/dec100m --device gpu --runs 1 --profile | grep -v "^|" ;;
  dec16) [ -d "$dir/dec100m16" ] && step 90 $B/generate $dir/dec100m16 --device gpu --runs 3 ;;
esac; done
