#!/bin/sh
# The CUDA plugin and the tapestry binary fit together, checked without a GPU:
#   plugin.sh <tapestry> <libtapestry_cuda.so>
# 1. tapestry links no CUDA library (its start time must not grow);
# 2. every symbol the plugin needs is defined: the dynamic linker binds all of them at once
#    (LD_BIND_NOW) when the plugin is preloaded into tapestry, as dlopen(RTLD_NOW) would.
set -e
tapestry=$1
plugin=$2
if readelf -d "$tapestry" | grep NEEDED | grep -E "libcud|libcublas|libnccl"; then
  echo "plugin.sh: $tapestry links a CUDA library"
  exit 1
fi
out=$(LD_BIND_NOW=1 LD_PRELOAD="$plugin" "$tapestry" -e 'print(tp.ones{2}:sum():item())')
test "$out" = "2.0" || { echo "plugin.sh: unexpected output: $out"; exit 1; }
echo "plugin.sh: tapestry links no CUDA library; $plugin resolves against it"
