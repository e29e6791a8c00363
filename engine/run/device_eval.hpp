// The single-rank evaluator on a device: evaluate() (evaluator.hpp) with the data on `dev`.
//   evaluate_on_device({y}, backend);   // y->value: host memory, as evaluate() leaves it
// - Leaves (nodes holding a value) are uploaded once, when a device kernel first reads them;
//   a View node is a view of its input's data wherever that lies (no copy, no transfer).
// - Values computed on the device stay there until their last reader ran; only roots come
//   back to the host.
// - A node the device has no kernel for (dev.supports) runs on the CPU kernels: its inputs
//   are downloaded (once each), and its result uploaded only if a device kernel reads it.
// - Fusion groups are plan::group_fusion's, as evaluate()'s; a group larger than the device's
//   map program (dev.map_limits) runs as one kernel per op. The CPU-only refinements of
//   evaluate() (chunked map-reduce, one-pass variance, banded stencils) are not done here: a
//   map feeding a reduction is its own kernel, so sums may differ from evaluate()'s in the
//   last bits where the CPU used those passes.
// - With `copies`, leaves kept there from earlier observations are not uploaded again, and the
//   roots' device values are kept as their values' copies (engine/device/device_copies.hpp).
//   When the device runs out of memory the copies are freed and the observation runs again.
// Throws as evaluate() does (Error, Cancelled); on any throw no root is changed and every
// device buffer is freed.
#pragma once

#include <vector>

#include "engine/device/backend.hpp"
#include "engine/device/device_copies.hpp"
#include "engine/ir/node.hpp"

namespace tapestry {

void evaluate_on_device(const std::vector<NodeRef>& roots, DeviceBackend& dev,
                        DeviceCopies* copies = nullptr);

}  // namespace tapestry
