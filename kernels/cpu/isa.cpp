// Which build of vector_kernels.cpp runs: the widest this CPU runs, unless a session narrowed it.
#include <atomic>

#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/vector_kernels.hpp"

namespace tapestry::cpu {
namespace {

// The AVX-512 table if it was built and this CPU runs it: x86-64-v4, what its objects are
// compiled for, with the OS's support (__builtin_cpu_supports checks that XCR0 saves the zmm
// and mask registers).
const vec::Table* avx512_table() {
#if defined(TAPESTRY_HAVE_AVX512)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512vl");
  return ok ? &vec::avx512::table : nullptr;
#else
  return nullptr;
#endif
}

std::atomic<const vec::Table*>& current() {
  static std::atomic<const vec::Table*> t{avx512_table() ? avx512_table() : &vec::base::table};
  return t;
}

}  // namespace

Isa isa() { return current().load(std::memory_order_relaxed) == &vec::base::table ? Isa::Base : Isa::Avx512; }

bool isa_available(Isa i) { return i == Isa::Base || avx512_table(); }

bool set_isa(Isa i) {
  const vec::Table* t = i == Isa::Base ? &vec::base::table : avx512_table();
  if (!t) return false;
  current().store(t, std::memory_order_relaxed);
  return true;
}

const char* isa_name(Isa i) { return i == Isa::Base ? vec::base::table.name : "avx512"; }

namespace vec {
const Table& table() { return *current().load(std::memory_order_relaxed); }
}  // namespace vec

}  // namespace tapestry::cpu
