// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
//   uint32_t r[4]; philox4x32_10({ctr0, ctr1, ctr2, ctr3}, {key0, key1}, r);
//   float u = u01_f32(r[0]);   // uniform [0, 1), from one element's counter alone
// A counter-based generator: any element's value is computed from (key, counter) with
// no state, so every shard of a random tensor agrees with the whole.
#pragma once

#include <cstdint>

#include "kernels/hd.hpp"

namespace tapestry::cpu {

struct PhiloxCtr {
  uint32_t c[4];
};
struct PhiloxKey {
  uint32_t k[2];
};

TP_HD inline void philox4x32_10(PhiloxCtr ctr, PhiloxKey key, uint32_t out[4]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = ctr.c[0], c1 = ctr.c[1], c2 = ctr.c[2], c3 = ctr.c[3];
  uint32_t k0 = key.k[0], k1 = key.k[1];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// Uniform [0, 1) from the top 24 bits; (0, 1] variants never give 0 (for log).
TP_HD inline float u01_f32(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
TP_HD inline double u01_f64(uint32_t hi, uint32_t lo) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}
TP_HD inline double u01_open0_f32(uint32_t x) { return ((x >> 8) + 1.0) * (1.0 / 16777216.0); }
TP_HD inline double u01_open0_f64(uint32_t hi, uint32_t lo) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32) | lo;
  return ((x >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace tapestry::cpu
