// One block of one op on a device: run_block (block.hpp) over device views.
//   if (device_takes(dev, n)) out = run_block_on(dev, n, sig, box, {slice of input 0, ...});
//   device evaluator: run_block_on(dev, n, sig, sig.space_box(), whole inputs)  // the whole node
// inputs[i] is exactly sig.input_slice(i, box) of input i, any strides (an empty DeviceView where
// a clipped projection reads nothing); the result is a new contiguous device tensor of the
// output slice's shape. What a block means (window origins, cat offsets, slice starts) is the
// signature's arithmetic, as in run_block, so the CPU and every device agree by construction.
#pragma once

#include <vector>

#include "engine/device/backend.hpp"
#include "engine/ir/node.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry {

// Whether `dev` runs n's blocks: it has kernels for n, and a fused program fits one kernel.
bool device_takes(const DeviceBackend& dev, const Node& n);

DeviceView run_block_on(DeviceBackend& dev, const Node& n, const poly::Signature& sig, const poly::Box& box,
                        const std::vector<DeviceView>& inputs);

}  // namespace tapestry
