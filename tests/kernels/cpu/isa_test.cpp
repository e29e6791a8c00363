// The instruction sets of the hot loops (vector_kernels.cpp built for AVX2 and AVX-512): the
// widest this CPU runs is the default, both variants compute the same values, and the AVX-512
// build does not carry GCC 12's vector-constant miscompile (cmake/native_flags.cmake).
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "helpers.hpp"
#include "kernels/cpu/vector_kernels.hpp"

using namespace tapestry;
using namespace tapestry::test;

#if defined(TAPESTRY_HAVE_AVX512)
namespace tapestry::test::avx512 {
int wrong_vector_constants();  // isa_avx512_constants.cpp, built with the AVX-512 flags
}
#endif

namespace {

template <class T> std::vector<T> random_values(int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<T> v(static_cast<size_t>(n));
  if constexpr (std::is_same_v<T, bool>) {
    for (auto&& x : v) x = (g() & 1) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(-6, 6);
    for (auto& x : v) x = static_cast<T>(d(g));
    const T special[] = {T(0),
                         -T(0),
                         std::numeric_limits<T>::infinity(),
                         -std::numeric_limits<T>::infinity(),
                         std::numeric_limits<T>::quiet_NaN(),
                         std::numeric_limits<T>::denorm_min(),
                         T(1e30)};
    for (size_t i = 0; i < std::size(special); ++i) v[i * 7 % v.size()] = special[i];
  } else {
    std::uniform_int_distribution<int64_t> d(-1000, 1000);
    for (auto& x : v) x = static_cast<T>(d(g));
  }
  return v;
}

std::shared_ptr<Value> random_tensor(DType t, int64_t n, unsigned seed) {
  return dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return tensor<T>({n}, random_values<T>(n, seed));
  });
}

// The program's output bytes under instruction set i.
std::vector<unsigned char> run_with(cpu::Isa i, const cpu::MapProgram& p, DType out, int64_t n) {
  REQUIRE(cpu::set_isa(i));
  auto o = Value::alloc(out, {n});
  cpu::run_map(p, o->view());
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * dtype_size(out));
  std::memcpy(bytes.data(), o->view().byte_ptr(), bytes.size());
  return bytes;
}

// glibc's vector math (libmvec) has its own AVX2 and AVX-512 routines, which need not round alike.
bool libm(Op op, DType t) {
  switch (op) {
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::Pow:
    case Op::Atan2: return true;
    case Op::Tanh: return t != DType::F32;  // f32 is kernels/tanh_f32.hpp's, the same code
    default: return false;
  }
}

// Equal bytes, or for libm's functions equal within 4 ulp of the element type.
bool agree(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, DType t, bool approx) {
  if (a == b) return true;
  if (!approx || (t != DType::F32 && t != DType::F64)) return false;
  return dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const size_t n = a.size() / sizeof(T);
      for (size_t i = 0; i < n; ++i) {
        T x, y;
        std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
        std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
        if (!close<T>(x, y, 4 * std::numeric_limits<T>::epsilon())) return false;
      }
      return true;
    } else {
      return false;
    }
  });
}

}  // namespace

TEST_CASE("kernels.cpu.isa.widest_by_default") {
  const cpu::Isa widest = cpu::isa_available(cpu::Isa::Avx512) ? cpu::Isa::Avx512 : cpu::Isa::Base;
  CHECK(cpu::isa() == widest);
  CHECK(cpu::set_isa(cpu::Isa::Base));
  CHECK(cpu::isa() == cpu::Isa::Base);
  CHECK((std::string(cpu::isa_name(cpu::Isa::Base)) == "avx2" ||
         std::string(cpu::isa_name(cpu::Isa::Base)) == "x86-64"));
  CHECK(std::string(cpu::isa_name(cpu::Isa::Avx512)) == "avx512");
  CHECK(cpu::set_isa(cpu::Isa::Avx512) == cpu::isa_available(cpu::Isa::Avx512));
  cpu::set_isa(widest);
  CHECK(cpu::isa() == widest);
}

TEST_CASE("kernels.cpu.isa.avx512_vector_constants") {
  // The regression test of the GCC 12 miscompile: with AVX-512 enabled, a constant like
  // {1.0, 1.0, 0.0, 0.0} came out as {1, 1, 1, 1}.
#if defined(TAPESTRY_HAVE_AVX512)
  if (!cpu::isa_available(cpu::Isa::Avx512)) {
    MESSAGE("this CPU has no AVX-512: the constants are not run here");
    return;
  }
  CHECK(test::avx512::wrong_vector_constants() == 0);
#else
  MESSAGE("built without AVX-512 kernels");
#endif
}

TEST_CASE("kernels.cpu.isa.map_variants_agree") {
  if (!cpu::isa_available(cpu::Isa::Avx512)) {
    MESSAGE("one instruction set on this machine");
    return;
  }
  const cpu::Isa was = cpu::isa();
  const DType types[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};
  for (int64_t n : {int64_t(1000), int64_t(4133)}) {  // a padded last tile; several tiles
    for (DType t : types) {
      auto a = random_tensor(t, n, 1), b = random_tensor(t, n, 2);
      auto check = [&](Op op, DType out, DType in, std::vector<View> leaves) {
        const bool is_float = in == DType::F32 || in == DType::F64;
        if (libm(op, in) && !is_float) return;  // builders cast integers to floats first
        const cpu::MapProgram p = single(op, out, in, std::move(leaves));
        CAPTURE(op_def(op).name);
        CAPTURE(dtype_name(in));
        CAPTURE(dtype_name(out));
        CAPTURE(n);
        CHECK(agree(run_with(cpu::Isa::Base, p, out, n), run_with(cpu::Isa::Avx512, p, out, n), out,
                    libm(op, in)));
      };
      // Comparisons and logical ops give bools; run_map checks each instruction's dtypes.
      for (Op op :
           {Op::Neg, Op::Abs, Op::Exp, Op::Log, Op::Sqrt, Op::Rsqrt, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid,
            Op::Relu, Op::Gelu, Op::Floor, Op::Ceil, Op::Round, Op::Sign, Op::Square, Op::Reciprocal})
        check(op, t, t, {a->view()});
      check(Op::LogicalNot, DType::Bool, t, {a->view()});
      for (Op op :
           {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::FloorDiv, Op::Mod, Op::Pow, Op::Maximum, Op::Minimum})
        check(op, t, t, {a->view(), b->view()});
      if (t == DType::F32 || t == DType::F64) check(Op::Atan2, t, t, {a->view(), b->view()});
      for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::LogicalAnd, Op::LogicalOr})
        check(op, DType::Bool, t, {a->view(), b->view()});
      for (DType to : types) check(Op::Cast, to, t, {a->view()});
      auto m = random_tensor(DType::Bool, n, 3);
      check(Op::Where, t, t, {m->view(), a->view(), b->view()});
    }
  }
  cpu::set_isa(was);
}

TEST_CASE("kernels.cpu.isa.moments_variants_agree") {
  if (!cpu::isa_available(cpu::Isa::Avx512)) {
    MESSAGE("one instruction set on this machine");
    return;
  }
  const cpu::Isa was = cpu::isa();
  for (DType t : {DType::F32, DType::F64}) {
    auto x = Value::alloc(t, {100003});  // chunks of 16,384 and a ragged last one
    std::mt19937 g(4);
    std::normal_distribution<double> d(1000, 3);  // a large mean, a small spread
    for (int64_t i = 0; i < 100003; ++i) {
      if (t == DType::F32) x->data<float>()[i] = static_cast<float>(d(g));
      else x->data<double>()[i] = d(g);
    }
    cpu::Moments m[2][3];
    for (int v = 0; v < 2; ++v) {
      REQUIRE(cpu::set_isa(v == 0 ? cpu::Isa::Base : cpu::Isa::Avx512));
      cpu::run_moments(x->view().sliced({0}, {1}, {99999}), 3, m[v]);
    }
    for (int r = 0; r < 3; ++r) {
      CAPTURE(r);
      CAPTURE(dtype_name(t));
      CHECK(std::bit_cast<uint64_t>(m[0][r].sum) == std::bit_cast<uint64_t>(m[1][r].sum));
      CHECK(std::bit_cast<uint64_t>(m[0][r].dmean) == std::bit_cast<uint64_t>(m[1][r].dmean));
      CHECK(std::bit_cast<uint64_t>(m[0][r].m2) == std::bit_cast<uint64_t>(m[1][r].m2));
    }
  }
  cpu::set_isa(was);
}

TEST_CASE("kernels.cpu.isa.gemv_variants_agree") {
  // Rows shorter than one block of 32, a whole number of blocks, and blocks plus a tail; row
  // counts off the variants' row blocks (4 and 2); rows padded apart.
  const cpu::Isa was = cpu::isa();
  std::mt19937 g(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int64_t k : {int64_t(5), int64_t(32), int64_t(100), int64_t(256)}) {
    const int64_t n = 37, lda = k + 3;
    std::vector<float> a(static_cast<size_t>(n * lda)), x(static_cast<size_t>(k));
    for (float& v : a) v = d(g);
    for (float& v : x) v = d(g);
    std::vector<std::vector<float>> ys;
    for_each_isa([&](const char*) {
      std::vector<float> y(static_cast<size_t>(n));
      cpu::vec::table().gemv_f32(a.data(), lda, x.data(), y.data(), n, k);
      ys.push_back(y);
    });
    CAPTURE(k);
    for (int64_t i = 0; i < n; ++i) {
      double want = 0, scale = 0;  // f32 rounding is relative to the terms' magnitude
      for (int64_t p = 0; p < k; ++p) {
        const double t = double(a[static_cast<size_t>(i * lda + p)]) * x[static_cast<size_t>(p)];
        want += t;
        scale += std::abs(t);
      }
      CHECK(std::abs(ys[0][static_cast<size_t>(i)] - want) <= 1e-6 * scale);
      for (const auto& y : ys)
        CHECK(std::bit_cast<uint32_t>(y[static_cast<size_t>(i)]) ==
              std::bit_cast<uint32_t>(ys[0][static_cast<size_t>(i)]));
    }
  }
  cpu::set_isa(was);
}

// The 16-bit casts' vector loops (F16C for f16, integer rounding for bf16) under each instruction
// set, against half.hpp's generic rounding from double, element by element: f32 inputs of every
// sign, exponent and top mantissa bits with the low bits that decide a rounding (ties, either
// side, random), and every f16 and bf16 bit pattern widened.
TEST_CASE("kernels.cpu.isa.half_casts_round_as_the_generic_code") {
  std::mt19937 g(7);
  std::vector<float> xs;
  for (uint32_t top = 0; top < 65536; ++top)
    for (uint32_t low :
         {0u, 0x1000u, 0x0fffu, 0x1001u, 0x8000u, 0x7fffu, 0x8001u, static_cast<uint32_t>(g() & 0xffffu)}) {
      const uint32_t u = top << 16 | low;
      xs.push_back(std::bit_cast<float>(u));
    }
  std::vector<uint16_t> patterns(65536);
  for (uint32_t b = 0; b < 65536; ++b) patterns[b] = static_cast<uint16_t>(b);
  const int64_t n = static_cast<int64_t>(xs.size());
  auto x = tensor<float>({n}, xs);
  auto bits_of = [&](DType t) {
    auto v = Value::alloc(t, {65536});
    std::memcpy(v->view().byte_ptr(), patterns.data(), 2 * 65536);
    return v;
  };
  auto h = bits_of(DType::F16), b = bits_of(DType::BF16);
  for_each_isa([&](const char* isa) {
    CAPTURE(isa);
    for (DType t : {DType::F16, DType::BF16}) {
      CAPTURE(dtype_name(t));
      auto o = Value::alloc(t, {n});
      cpu::run_map(single(Op::Cast, t, DType::F32, {x->view()}), o->view());
      const auto* got = reinterpret_cast<const uint16_t*>(o->view().byte_ptr());
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t want =
            t == DType::F16 ? half_detail::from_double<5, 10>(xs[i]) : half_detail::from_double<8, 7>(xs[i]);
        if (got[i] != want) {
          CAPTURE(std::bit_cast<uint32_t>(xs[i]));
          REQUIRE(got[i] == want);
        }
      }
      auto w = Value::alloc(DType::F32, {65536});
      cpu::run_map(single(Op::Cast, DType::F32, t, {(t == DType::F16 ? h : b)->view()}), w->view());
      for (uint32_t p = 0; p < 65536; ++p) {
        const float want = t == DType::F16 ? half_detail::half_to_float_bits(static_cast<uint16_t>(p))
                                           : std::bit_cast<float>(p << 16);
        const float wide = w->data<float>()[p];
        if (std::isnan(want)) {
          REQUIRE(std::isnan(wide));
        } else {
          REQUIRE(std::bit_cast<uint32_t>(wide) == std::bit_cast<uint32_t>(want));
        }
      }
    }
  });
}
