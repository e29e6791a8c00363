#!/bin/sh
# Packs a CUDA build made here for a GPU machine that has the CUDA toolkit but none of
# Tapestry's Debian libraries and no package registry (docs/gpu.md, "Running on a GPU machine"):
#   tests/gpu/bundle.sh [build-dir] [out]     # default build, .gpu/bundle.tar.xz
# The bundle holds the stripped binaries (tapestry, its CUDA plugin, the GPU test and bench
# programs) and every shared library they need except glibc's and the CUDA toolkit's, which the
# GPU machine has. tests/gpu/run_carried.sh unpacks and runs it there.
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
out=${2:-$src/.gpu/bundle.tar.xz}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$(dirname "$out")"
bins="repl/tapestry repl/libtapestry_cuda.so tests/gpu/gpu_consistency tests/gpu/gpu_host_test
  tests/kernels/kernels_cuda_test tests/engine/engine_device_test bench/bench_gpu"
for b in $bins; do
  test -x "$build/$b" || { echo "bundle.sh: $build/$b is missing (configure with CUDA and build it)"; exit 1; }
  strip -o "$stage/bin/$(basename "$b")" "$build/$b"
done
# The libraries, resolved here; glibc and the toolkit's stay behind.
for b in $bins; do ldd "$build/$b"; done | awk '/=>/ {print $3}' | sort -u |
  grep -vE '^/usr/local/cuda|/(libc|libm|libmvec|libpthread|libdl|librt|libresolv)\.so|ld-linux' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
tar -C "$stage" -cf - bin lib | xz -T0 -6 > "$out"
echo "bundle.sh: $out ($(du -h "$out" | cut -f1)), $(ls "$stage/lib" | wc -l) libraries"
