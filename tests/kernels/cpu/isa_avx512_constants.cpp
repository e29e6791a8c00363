// Built with the AVX-512 kernels' flags (TAPESTRY_AVX512_FLAGS): vector constants whose low 128
// bits are a splat and whose high bits are zero, the shape GCC 12 gets wrong with AVX-512 unless
// its inter-unit broadcast is off (cmake/native_flags.cmake). Run only on a CPU with AVX-512.
#include <cstdint>
#include <cstring>

namespace tapestry::test::avx512 {
namespace {

// A constant array stored through memcpy: GCC builds it as one vector constant.
template <class T, int N, int S> [[gnu::noinline]] void store_constant(T* p) {
  T c[N];
  for (int i = 0; i < N; ++i) c[i] = i < S ? T(3) : T(0);
  std::memcpy(p, c, sizeof c);
}

template <class T, int N, int S> bool holds() {
  T d[N];
  store_constant<T, N, S>(d);
  for (int i = 0; i < N; ++i)
    if (d[i] != (i < S ? T(3) : T(0))) return false;
  return true;
}

}  // namespace

// Each of f64, f32 and integer lanes, 256 and 512 bits: the shapes that came out wrong.
int wrong_vector_constants() {
  return !holds<double, 4, 2>() + !holds<double, 8, 2>() + !holds<float, 8, 4>() + !holds<float, 16, 4>() +
         !holds<int32_t, 8, 4>() + !holds<int64_t, 4, 2>() + !holds<int16_t, 16, 8>() +
         !holds<int8_t, 32, 16>();
}

}  // namespace tapestry::test::avx512
