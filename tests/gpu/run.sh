#!/bin/sh
# The whole GPU check in one command, on a machine with a GPU (see docs/gpu.md):
#   tests/gpu/run.sh [build-dir]      # default /tmp/build-cuda
# Configures with CUDA ON, builds, runs every `gpu` test (the consistency harness),
# Lua op scripts through tapestry on the GPU (TAPESTRY_DEVICE=cuda: every single-rank
# observation on the device evaluator and the CUDA plugin), the same scripts on 3 virtual ranks
# sharing the GPU (device blocks, in-process device copies), the device script under mpirun with
# one rank per GPU (NCCL device peers) when there are 2 or more, and the GPU benchmark.
# Exits non-zero when a test fails; skipped tests say why.
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-cuda}
nvidia-smi -L || echo "run.sh: nvidia-smi failed: the gpu tests will skip"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAPESTRY_CUDA=ON
ninja -C "$build" -j"$(nproc)" tapestry tapestry_cuda gpu_consistency gpu_host_test bench_gpu \
  kernels_cuda_test engine_device_test
ctest --test-dir "$build" -L gpu --output-on-failure -V 2>&1 | grep -E "SKIP|gpu\.|agree|MISMATCH|RESULT|tests passed|Failed|Passed" || true
ctest --test-dir "$build" -L gpu --output-on-failure
ctest --test-dir "$build" -R "gpu\.plugin_links|engine\.(run\.device_eval|shard\.device|device\.peers|session\.device_lua)" --output-on-failure
"$build/tests/kernels/kernels_cuda_test"
"$build/tests/gpu/gpu_host_test"
# The Lua op scripts on the GPU: each checks its results against reference values.
echo "run.sh: tests/lua/ops/*.lua with TAPESTRY_DEVICE=cuda"
TAPESTRY_DEVICE=cuda "$build/repl/tapestry" -e 'local m = tp.mesh()
  assert(m.device == "cuda", "the device is " .. tostring(m.device) .. ", gpu: " .. tostring(m.gpu))
  print("run.sh: device " .. m.device .. ", " .. m.gpu)'
for f in "$src"/tests/lua/ops/*.lua; do
  (cd "$src/tests/lua/ops" && OPENBLAS_NUM_THREADS=1 TAPESTRY_DEVICE=cuda "$build/repl/tapestry" "$f" >/dev/null) \
    && echo "run.sh: cuda $(basename "$f") passed" || { echo "run.sh: cuda $(basename "$f") FAILED"; exit 1; }
done
# Several ranks on the GPU: blocks on the device, slices moved device to device.
for f in "$src"/tests/lua/ops/*.lua "$src"/tests/lua/device/*.lua; do
  case "$f" in *laziness.lua) continue ;; esac
  (cd "$(dirname "$f")" && OPENBLAS_NUM_THREADS=1 TAPESTRY_RANKS=3 TAPESTRY_VERIFY=1 TAPESTRY_DEVICE=cuda \
     "$build/repl/tapestry" "$f" >/dev/null) \
    && echo "run.sh: cuda on 3 virtual ranks $(basename "$f") passed" \
    || { echo "run.sh: cuda on 3 virtual ranks $(basename "$f") FAILED"; exit 1; }
done
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null; then
  echo "run.sh: tests/lua/device/sharded.lua under mpirun -n $gpus (NCCL device peers)"
  (cd "$src/tests/lua/device" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TAPESTRY_DEVICE=cuda \
     mpirun -n "$gpus" "$build/repl/tapestry" -e 'print(tp.mesh().device_transport)' sharded.lua)
else
  echo "run.sh: SKIP NCCL device peers under mpirun: $gpus GPU(s) (one rank per GPU needs 2), or no mpirun"
fi
"$build/bench/bench_gpu"
