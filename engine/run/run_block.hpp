// Running one block of one op: the unit of work every rank executes.
//   poly::Signature sig = poly::signature_of(*n);
//   std::vector<View> ins = {slice of input 0 = sig.input_slice(0, box), ...};
//   View out = run_block(*n, sig, box, ins);   // out covers sig.output_slice(box)
// A block that splits a reduction dim returns a partial result of the output slice's shape;
// combine_partials merges partials with the op's monoid.
#pragma once

#include <vector>

#include "engine/ir/fused.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/signature.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

// Computes `box` (a box of n's index space). inputs[i] holds exactly the tensor slice
// sig.input_slice(i, box) of input i (contiguous or not), in the input's dtype; for a clipped
// projection (cat, write_region) whose slice is empty, inputs[i] is an empty View (no buf).
// Returns a new contiguous value of the output slice's shape and n's dtype.
std::shared_ptr<Value> run_block(const Node& n, const poly::Signature& sig, const poly::Box& box,
                                 const std::vector<View>& inputs);

// Map, FusedMap and Correlate blocks can also be written into a given view (the output
// slice's shape and n's dtype, contiguous or not), e.g. a window of a larger buffer.
bool runs_into(const Node& n);
// stream_out: `out` is a band of an output far larger than the caches (cpu::MapProgram).
void run_block_into(const Node& n, const poly::Signature& sig, const poly::Box& box,
                    const std::vector<View>& inputs, const View& out, bool stream_out = false);

// One instruction of a fused program as the map kernels take it (CPU and device alike).
cpu::MapInstr map_instr(const FusedInstr& i);

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
