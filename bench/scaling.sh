#!/bin/sh
# Weak and strong scaling of bench/scaling.lua (a matmul and a stencil) on 1, 2 and 4 ranks.
#   bench/scaling.sh [path/to/tapestry]         (default: build/repl/tapestry)
# Prints one RESULT line per run, then a table of times, speed-ups (strong: t1 / tN) and
# efficiencies (weak: t1 / tN). One thread per rank; MPI environment of docs/testing.md (MPI tests).
# BENCH_REPS (default 7) timed runs per figure, after one warm-up; the median is reported.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tapestry=${1:-$here/../build/repl/tapestry}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_ess_singleton_isolated=1
export OPENBLAS_NUM_THREADS=1 TAPESTRY_THREADS=1
# Open MPI binds each of -n 2 ranks to one core; on a machine shared with other work that halves
# the ranks' speed (a bound rank cannot leave a busy core). SCALING_BIND=core keeps its default.
[ "${SCALING_BIND:-none}" = none ] && export OMPI_MCA_hwloc_base_binding_policy=none
export BENCH_REPS=${BENCH_REPS:-7}
out=$(mktemp)
for w in matmul stencil; do
  for mode in strong weak; do
    for n in 1 2 4; do
      if [ "$n" = 1 ]; then "$tapestry" "$here/scaling.lua" $w $mode
      else "$tapestry" -n $n "$here/scaling.lua" $w $mode; fi
    done
  done
done | tee "$out"
echo
echo "| workload | -n 1 (s) | -n 2 (s) | -n 4 (s) | -n 2 | -n 4 |"
echo "|---|---|---|---|---|---|"
awk '/^RESULT/ { t[$2, ++k[$2]] = $4; if (k[$2] == 1) order[++m] = $2 }
  END { for (i = 1; i <= m; i++) { w = order[i]; kind = (w ~ /weak/) ? "efficiency" : "speed-up"
    printf "| %s | %.3f | %.3f | %.3f | %.2f× %s | %.2f× %s |\n", w, t[w,1], t[w,2], t[w,3],
      t[w,1] / t[w,2], kind, t[w,1] / t[w,3], kind } }' "$out"
rm -f "$out"
