# One build for every x86-64 machine with AVX2: the code is compiled for x86-64-v3 (AVX2, FMA,
# BMI2) with generic tuning, and the hot kernels (kernels/cpu/vector_kernels.cpp) a second time
# for AVX-512 (x86-64-v4); kernels/cpu/isa.cpp picks that variant at run time where the CPU has
# it. TAPESTRY_ISA=avx2 forces the AVX2 one (docs/debug.md).
#
# GCC 12.2 miscompiles AVX-512 code, and any code tuned for the AVX-512 Intel cores: a constant
# vector whose low 128 bits are a splat and whose high bits are zero, {1.0, 1.0, 0.0, 0.0}, is
# built by broadcasting the low element from a general register over the whole register, and
# holds {1, 1, 1, 1}. That broadcast is its inter-unit-move path: with
# -mtune-ctrl=^inter_unit_moves_to_vec the constant is loaded from memory instead, and is right.
# The AVX-512 objects are built with it; configure checks it here when this CPU has AVX-512, and
# so does the test kernels.cpu.isa.avx512_vector_constants on every AVX-512 machine.
#
#   TAPESTRY_KERNEL_FLAGS   every C++ object (x86-64-v3, or -march=native without AVX2)
#   TAPESTRY_AVX512_FLAGS   the AVX-512 objects; TAPESTRY_AVX512 says whether there are any
include(CheckCXXSourceRuns)
set(TAPESTRY_KERNEL_FLAGS "" CACHE INTERNAL "flags of every C++ object")
set(TAPESTRY_AVX512_FLAGS "" CACHE INTERNAL "flags of the AVX-512 kernel objects")
set(TAPESTRY_AVX512 OFF CACHE INTERNAL "AVX-512 kernel variants are built")

if(TAPESTRY_NATIVE AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  # This machine runs AVX2 code (the flags' binary must run here: the tests do).
  set(CMAKE_REQUIRED_FLAGS "-march=x86-64-v3")
  check_cxx_source_runs([[
    int main() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 0 : 1; }
  ]] TAPESTRY_HAVE_AVX2)
  if(TAPESTRY_HAVE_AVX2)
    set(TAPESTRY_KERNEL_FLAGS -march=x86-64-v3 -mtune=generic CACHE INTERNAL "flags of every C++ object")
    set(avx512 -march=x86-64-v4 -mprefer-vector-width=512)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      list(APPEND avx512 -mtune-ctrl=^inter_unit_moves_to_vec)
    endif()
    # The miscompile's shapes, in f64, f32 and integer lanes of 256 and 512 bits; on a CPU
    # without AVX-512 this only checks that the flags compile.
    string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${avx512}")
    check_cxx_source_runs([[
      #include <cstdint>
      #include <cstring>
      template <class T, int N, int S> __attribute__((noinline)) bool ok() {
        T c[N], d[N];
        for (int i = 0; i < N; ++i) c[i] = i < S ? T(3) : T(0);
        std::memcpy(d, c, sizeof c);
        for (int i = 0; i < N; ++i)
          if (d[i] != (i < S ? T(3) : T(0))) return false;
        return true;
      }
      int main() {
        if (!__builtin_cpu_supports("avx512f")) return 0;
        return ok<double, 4, 2>() && ok<double, 8, 2>() && ok<float, 8, 4>() && ok<float, 16, 4>() &&
               ok<int32_t, 8, 4>() && ok<int64_t, 4, 2>() && ok<int16_t, 16, 8>() && ok<int8_t, 32, 16>()
                   ? 0 : 1;
      }
    ]] TAPESTRY_AVX512_CONSTANTS_OK)
    unset(CMAKE_REQUIRED_FLAGS)
    if(TAPESTRY_AVX512_CONSTANTS_OK)
      set(TAPESTRY_AVX512 ON CACHE INTERNAL "AVX-512 kernel variants are built")
      set(TAPESTRY_AVX512_FLAGS ${avx512} CACHE INTERNAL "flags of the AVX-512 kernel objects")
    else()
      message(WARNING "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} miscompiles AVX-512 vector "
                      "constants even with ${avx512}: the kernels are built for AVX2 only "
                      "(see cmake/native_flags.cmake)")
    endif()
  else()
    set(TAPESTRY_KERNEL_FLAGS -march=native CACHE INTERNAL "flags of every C++ object")
  endif()
endif()
message(STATUS "Tapestry CPU kernels: ${TAPESTRY_KERNEL_FLAGS}; AVX-512 variants: ${TAPESTRY_AVX512}")

foreach(flag ${TAPESTRY_KERNEL_FLAGS})
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
endforeach()
