// The kernels' thread pool: one job at a time, the calling thread takes part.
//   parallel_for(n, /*grain=*/64, [&](int64_t lo, int64_t hi, int worker) { ... });
//   worker < pool_width(); nested or concurrent calls run inline on the caller.
#pragma once

#include <cstdint>
#include <functional>

namespace tapestry::cpu {

using RangeFn = std::function<void(int64_t begin, int64_t end, int worker)>;

// Splits [0, n) into pieces of `grain` items handed out dynamically (first come, first
// served, so a busy core does not hold the others back). The first exception thrown
// by fn stops the handing out and is rethrown here once every piece in flight ended.
void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

// Workers that may run a piece: `worker` passed to fn is below this.
int pool_width();

// A grain giving each thread several pieces of at least `min_grain` items.
int64_t grain_for(int64_t n, int64_t min_grain);

}  // namespace tapestry::cpu
