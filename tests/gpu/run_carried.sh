#!/bin/bash
# The GPU check over a bundle made by tests/gpu/bundle.sh, on a GPU machine with the CUDA toolkit
# and nothing else of Tapestry's (no registry, no build): the same steps as tests/gpu/run.sh plus
# the tour and train_mlp against the CPU path, and the GPU-versus-CPU workload table.
#   tests/gpu/run_carried.sh [bundle] [log-dir] [steps]
# Every step runs under a time limit and the run goes on past a failure; the summary at the end
# lists each step's result. steps: a regex over step names (default: all).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$src/.gpu/bundle.tar.xz}
logs=${2:-${OUT:-/tmp}}
only=${3:-.}
tp=/tmp/tp-carried
rm -rf "$tp" && mkdir -p "$tp" "$logs" && tar -xJf "$bundle" -C "$tp" || exit 1
bin=$tp/bin

# The toolkit's libraries the plugin links, wherever this image keeps them.
cuda_dirs=""
for l in libcublas.so.13 libcublasLt.so.13 libcufft.so.12 libcusolver.so.12 libcusparse.so.12 \
         libnvJitLink.so.13 libnccl.so.2; do
  d=""
  for c in /usr/local/cuda/lib /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$c/$l" ] && { d=$c; break; }
  done
  [ -z "$d" ] && d=$(dirname "$(find /usr /opt -name "$l" 2>/dev/null | head -1)" 2>/dev/null)
  [ -n "$d" ] && [ "$d" != . ] && case ":$cuda_dirs:" in *":$d:"*) ;; *) cuda_dirs=$cuda_dirs:$d ;; esac
done
export LD_LIBRARY_PATH=$tp/lib$cuda_dirs src bin logs
# Some op scripts check files with numpy: this image's numpy is in PyTorch's environment.
for py in /opt/torch/.venv/bin; do [ -x "$py/python3" ] && export PATH=$py:$PATH; done
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "run_carried: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ldd "$bin/tapestry" "$bin/libtapestry_cuda.so" | grep "not found" && echo "run_carried: MISSING LIBRARIES"

summary=$logs/summary.txt
: > "$summary"
# step NAME SECONDS COMMAND...: runs COMMAND under a limit, logs it, records the result.
step() {
  local name=$1 limit=$2
  shift 2
  [[ $name =~ $only ]] || return 0
  local t0=$SECONDS
  echo "=== $name"
  timeout -k 5 "$limit" bash -c '"$@"' step "$@" > "$logs/step.out" 2>&1
  local rc=$?
  tail -c 6000 "$logs/step.out"
  local verdict=PASS
  [ $rc -ne 0 ] && verdict="FAIL rc=$rc"
  [ $rc -eq 124 ] && verdict="TIMEOUT ${limit}s"
  echo "$verdict $name ($((SECONDS - t0)) s)" | tee -a "$summary"
}

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv
step smoke 60 env TAPESTRY_DEVICE=cuda "$bin/tapestry" -e 'local m = tp.mesh()
  print("device " .. tostring(m.device) .. ", " .. tostring(m.gpu))
  assert(m.device == "cuda")
  print(tp.ones{2}:sum():item(), (tp.arange(0, 10) * 2):sum():item())'
step plugin_links 60 env LD_BIND_NOW=1 LD_PRELOAD="$bin/libtapestry_cuda.so" "$bin/tapestry" -e 'print(tp.ones{2}:sum():item())'
step consistency 240 "$bin/gpu_consistency"
step kernels_cuda 240 "$bin/kernels_cuda_test"

# Each Lua op script checks its own results; 8 at a time share the GPU.
lua_scripts() {  # ranks dir... : every script, in parallel, failures named
  local ranks=$1
  shift
  local fails=0
  for f in "$@"; do echo "$f"; done | xargs -P 8 -I{} sh -c '
    f={}; cd "$(dirname "$f")" || exit 1
    if [ "$0" = 1 ]; then
      out=$(TAPESTRY_DEVICE=cuda timeout 120 "$1" "$f" 2>&1)
    else
      out=$(TAPESTRY_RANKS=$0 TAPESTRY_VERIFY=1 TAPESTRY_DEVICE=cuda timeout 120 "$1" "$f" 2>&1)
    fi
    rc=$?
    if [ $rc -eq 0 ]; then echo "ok $(basename "$f")"; else echo "FAILED rc=$rc $(basename "$f")"; echo "$out" | tail -20; fi' \
    "$ranks" "$bin/tapestry" | tee "$logs/lua.tmp"
  ! grep -q FAILED "$logs/lua.tmp"
}
export -f lua_scripts
ops=$(ls "$src"/tests/lua/ops/*.lua)
step lua_ops_1rank 240 lua_scripts 1 $ops
step lua_ops_3ranks 300 lua_scripts 3 $(echo "$ops" | grep -v laziness.lua) "$src"/tests/lua/device/*.lua

# The tour and train_mlp: the GPU's printed values are the CPU's to f32 tolerance.
compare_outputs() {  # script: runs it on cpu and cuda, compares every number
  local s=$1
  (cd "$src/scripts" && TAPESTRY_DEVICE=cpu "$bin/tapestry" "$s" > "$logs/cpu.out" 2>&1) || { echo "cpu run failed"; cat "$logs/cpu.out"; return 1; }
  (cd "$src/scripts" && TAPESTRY_DEVICE=cuda "$bin/tapestry" "$s" > "$logs/cuda.out" 2>&1) || { echo "cuda run failed"; cat "$logs/cuda.out"; return 1; }
  python3 - "$logs/cpu.out" "$logs/cuda.out" <<'EOF'
import re, sys
a, b = (open(p).read().splitlines() for p in sys.argv[1:3])
num = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
bad = 0
# timings, the device's name and the kernel counts (the GPU fuses no map into a reduction) differ
skip = re.compile(r"ms/step|steps in|\bs\)|seconds|took|time|device|gpu|cuda|cpu|kernels", re.I)
if len(a) != len(b):
    print(f"line counts differ: cpu {len(a)}, cuda {len(b)}"); bad += 1
for i, (x, y) in enumerate(zip(a, b)):
    if x == y or skip.search(x) or skip.search(y):
        continue
    nx, ny = num.findall(x), num.findall(y)
    if num.sub("#", x) != num.sub("#", y) or len(nx) != len(ny) or any(
            abs(float(p) - float(q)) > 1e-4 * max(1.0, abs(float(p))) for p, q in zip(nx, ny)):
        print(f"line {i+1}:\n  cpu:  {x}\n  cuda: {y}"); bad += 1
print(f"{sys.argv[2]}: {len(a)} lines, {bad} differ beyond f32 tolerance")
sys.exit(1 if bad else 0)
EOF
}
export -f compare_outputs
step tour_cpu_vs_cuda 120 compare_outputs tour.lua
step train_mlp_cpu_vs_cuda 120 compare_outputs train_mlp.lua

step bench_gpu 180 "$bin/bench_gpu"
# The workloads end to end, GPU beside this machine's CPU path, in one run.
workload() {  # script device
  (cd "$src" && BENCH_REPS=3 TAPESTRY_DEVICE=$2 OPENBLAS_NUM_THREADS=$(nproc) "$bin/tapestry" "bench/$1")
}
export -f workload
for w in w1_linear.lua w2_elementwise.lua w4_heat.lua w7_mlp.lua; do
  step "bench_${w%.lua}_cuda" 120 workload "$w" cuda
  step "bench_${w%.lua}_cpu" 120 workload "$w" cpu
done
step engine_device 240 "$bin/engine_device_test"
echo "=== summary"
cat "$summary"
rm -f "$logs/step.out" "$logs/lua.tmp"
! grep -qv '^PASS' "$summary"
