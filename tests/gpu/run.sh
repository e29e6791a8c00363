#!/bin/sh
# The whole GPU check in one command, on a machine with a GPU (see docs/gpu.md):
#   tests/gpu/run.sh [build-dir]      # default /tmp/build-cuda
# Configures with CUDA ON, builds, runs every `gpu` test (consistency harness, NCCL when 2+ GPUs)
# and the GPU benchmark. Exits non-zero when a test fails; skipped tests say why.
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-cuda}
nvidia-smi -L || echo "run.sh: nvidia-smi failed: the gpu tests will skip"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAPESTRY_CUDA=ON
ninja -C "$build" -j"$(nproc)" gpu_consistency gpu_nccl gpu_host_test bench_gpu kernels_cuda_test
ctest --test-dir "$build" -L gpu --output-on-failure -V 2>&1 | grep -E "SKIP|gpu\.|agree|MISMATCH|RESULT|tests passed|Failed|Passed" || true
ctest --test-dir "$build" -L gpu --output-on-failure
"$build/tests/kernels/kernels_cuda_test"
"$build/tests/gpu/gpu_host_test"
"$build/bench/bench_gpu"
