#!/bin/sh
# Instructions one W6 iteration costs, load-independent (docs/performance.md, W6):
#   bench/w6_callgrind.sh [build/repl/tapestry] [out-dir]
# Runs bench/w6_cg.lua's warm-up and one timed run (BENCH_REPS=1) under callgrind with 50 and
# with 250 iterations each; (I(250) - I(50)) / 400 leaves out start-up, A's set-up and the first
# iterations' plan and allocator warm-up. The 250-iteration profile stays in the out dir for
# callgrind_annotate. callgrind runs the AVX2 kernels (it does not emulate AVX-512).
set -e
here=$(dirname "$0")
bin=${1:-build/repl/tapestry}
out=${2:-/tmp/w6cg}
mkdir -p "$out"
for n in 50 250; do
  W6_ITERS=$n BENCH_REPS=1 TAPESTRY_THREADS=1 valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.$n" "$bin" "$here/w6_cg.lua" >"$out/log.$n" 2>&1
done
total() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }
a=$(total "$out/cg.50")
b=$(total "$out/cg.250")
echo "instructions: 50 iterations $a, 250 iterations $b; per iteration $(( (b - a) / 400 ))"
