// Which dtypes each op's kernels take: the one table every node passes when it is made.
//   check_op_dtypes(Op::Max, {DType::C64}, DType::C64);   // throws Error: "... complex ..."
// f16 and bf16 are storage types: the builders cast them to f32 around every op that computes
// (docs/dtypes.md), so only data movement (views, cat, copies, gathers), casts, where, constants
// and loads see them. c64 and c128 reach the maps of map_takes_complex (op.hpp), sum and prod,
// matmul and data movement. Anything else is refused here, when the graph is built, with the
// dtype named: the safety net under the builders' own messages.
#pragma once

#include <initializer_list>
#include <span>

#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"

namespace tapestry {

// Throws Error when op's kernels do not take these input dtypes (and this output dtype).
void check_op_dtypes(Op op, std::span<const DType> inputs, DType out);

// True for the dtypes that not every kernel takes (f16, bf16, c64, c128): only nodes that
// touch one need the check, which keeps make_node's common path free of it.
inline bool is_storage_or_complex(DType t) { return is_half(t) || is_complex(t); }

}  // namespace tapestry
