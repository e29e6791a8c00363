#!/bin/sh
# gpu.nccl: runs nccl_test on every GPU of this node (one rank per GPU), or skips (77) saying why.
#   tests/gpu/nccl.sh build/tests/gpu/gpu_nccl /usr/bin/mpirun
bin=$1; mpirun=${2:-mpirun}
n=$("$bin" --count) || { echo "SKIP: cannot query CUDA devices"; exit 77; }
if [ "$n" -lt 2 ]; then
  echo "SKIP: the NCCL test needs 2 or more GPUs on this node, found $n ($("$bin" --why))"
  exit 77
fi
exec "$mpirun" -n "$n" "$bin"
