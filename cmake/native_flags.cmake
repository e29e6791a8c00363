# GCC 12.2, with AVX-512 enabled or tuned for the AVX-512 Intel cores (both come with
# -march=native on these Xeons), stores a constant whose low 128 bits are a splat and
# whose high bits are zero wrongly: `std::vector<double> d{1.0, 1.0, 0.0, 0.0}` holds
# {1, 1, 1, 1}. Detect it, and build everything for AVX2 with generic tuning instead
# (the kernels are memory-bound and measured no slower).
# TAPESTRY_KERNEL_FLAGS is empty when the compiler is sound.
include(CheckCXXSourceRuns)
set(TAPESTRY_KERNEL_FLAGS "" CACHE INTERNAL "flags that avoid a GCC 12 AVX-512 miscompile")
if(TAPESTRY_NATIVE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(CMAKE_REQUIRED_FLAGS "-O2 -march=native")
  check_cxx_source_runs([[
    #include <cstring>
    #include <vector>
    __attribute__((noinline)) void k(double* p) {
      const double c[4] = {1.0, 1.0, 0.0, 0.0};
      std::memcpy(p, c, sizeof c);
    }
    int main() {
      double d[4];
      k(d);
      std::vector<double> v{1.0, 1.0, 0.0, 0.0};
      return (d[3] == 0.0 && v[3] == 0.0) ? 0 : 1;
    }
  ]] TAPESTRY_NATIVE_CONSTANTS_OK)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT TAPESTRY_NATIVE_CONSTANTS_OK)
    message(WARNING "GCC miscompiles vector constants at -march=native here; "
                    "building with -mno-avx512f -mtune=generic (see cmake/native_flags.cmake)")
    set(TAPESTRY_KERNEL_FLAGS -mno-avx512f -mtune=generic CACHE INTERNAL
        "flags that avoid a GCC 12 AVX-512 miscompile")
  endif()
endif()

if(TAPESTRY_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  foreach(flag ${TAPESTRY_KERNEL_FLAGS})
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
endif()
