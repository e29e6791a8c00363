// run_block: one block of one op on a backend, from exactly the input slices its signature
// names. The one place that says how each kind of op runs; every evaluator and rank program
// calls it (the CPU, the simulated device and the CUDA plugin alike).
//   poly::Signature sig = poly::signature_of(n);
//   DeviceView out = run_block(be, n, sig, box, {slice sig.input_slice(0, box) of input 0, ...});
//   DeviceView all = run_node(be, n, {input 0, ...});   // the whole node from whole inputs
//   std::shared_ptr<Value> v = run_block(n, sig, box, host_slices);   // on the CPU, host views
// A block that splits a reduction dim returns a partial result of the output slice's shape;
// combine_partials merges partials with the op's monoid.
#pragma once

#include <memory>
#include <vector>

#include "engine/device/backend.hpp"
#include "engine/ir/fused.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/signature.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

class HostBackend;

// Computes `box` (a box of n's index space) on `be`. inputs[i] holds exactly the tensor slice
// sig.input_slice(i, box) of input i (any strides), in `be`'s memory; for a clipped projection
// (cat, write_region) whose slice is empty, inputs[i] is an empty DeviceView (no mem).
// Returns a new contiguous value of the output slice's shape and n's dtype.
DeviceView run_block(DeviceBackend& be, const Node& n, const poly::Signature& sig, const poly::Box& box,
                     const std::vector<DeviceView>& inputs);

// The whole node: inputs[i] is the whole input i. Computes the signature only where the op
// needs one (windows, slices, cat, region writes), so a loop of small observations pays for
// none on its maps, reductions and products.
DeviceView run_node(DeviceBackend& be, const Node& n, const std::vector<DeviceView>& inputs);
// The same into `out` (n's shape and dtype, contiguous; allocated by the caller).
void run_node_into(DeviceBackend& be, const Node& n, const std::vector<DeviceView>& inputs,
                   const DeviceView& out);

// View ops (reshape, permute, expand, slice, constrain) move no data: the whole node as a view
// of its whole input (a reshape the strides cannot express copies first).
bool is_view_op(const Node& n);
DeviceView view_node(DeviceBackend& be, const Node& n, const DeviceView& input);
// The same over a layout alone (a host View, say): false when a reshape needs the data
// contiguous first (copy it, then ask again).
bool view_layout(const Node& n, const View& in, View& out);
// A view op's block `box` as a view of its input slice (no copy, unless a reshape needs one):
// what run_block would copy out, for a caller that may keep a view (a rank's pieces).
DeviceView view_block(DeviceBackend& be, const Node& n, const poly::Signature& sig, const poly::Box& box,
                      const DeviceView& input);

// Whether `be` runs n's blocks: it has kernels for n, and a fused program fits one kernel.
bool backend_takes(const DeviceBackend& be, const Node& n);

// Map, FusedMap and Correlate blocks can also be written into a given view (the output
// slice's shape and n's dtype, contiguous or not), e.g. a window of a larger buffer.
bool runs_into(const Node& n);
// stream_out: `out` is a band of an output far larger than the caches (cpu::MapProgram).
void run_block_into(DeviceBackend& be, const Node& n, const poly::Signature& sig, const poly::Box& box,
                    const std::vector<DeviceView>& inputs, const DeviceView& out, bool stream_out = false);

// The same on the CPU over host views (the rank programs' CPU blocks).
std::shared_ptr<Value> run_block(const Node& n, const poly::Signature& sig, const poly::Box& box,
                                 const std::vector<View>& inputs);
void run_block_into(const Node& n, const poly::Signature& sig, const poly::Box& box,
                    const std::vector<View>& inputs, const View& out, bool stream_out = false);
// The CPU backend the host paths run on (stateless).
HostBackend& cpu_backend();

// The map program of a Map or FusedMap node (leaves left empty), e.g. for cpu::axpy_form.
cpu::MapProgram block_map_program(const Node& n);
// out = u + c * (correlate block `box` of w): cpu::run_correlate_axpy with the block's origin;
// false (nothing written) when the kernel does not take this block.
bool run_stencil_axpy_into(const Node& w, const poly::Signature& sig, const poly::Box& box,
                           const std::vector<View>& inputs, const View& u, float c, const View& out,
                           bool stream);

// acc = combine(acc, part), elementwise, same shape and dtype (Sum, Prod, Max, Min, And, Or).
void combine_partials(poly::CombineKind kind, const View& acc, const View& part);

}  // namespace tapestry
