#include "engine/ir/op.hpp"

#include <array>

namespace tapestry {

namespace {
constexpr std::array<OpDef, kNumOps> kOpTable = {{
#define TAPESTRY_OP_DEF(e, name, kind, arity, attrs, doc) {Op::e, name, OpKind::kind, arity, doc},
    TAPESTRY_OPS(TAPESTRY_OP_DEF)
#undef TAPESTRY_OP_DEF
}};

// The table is indexed by the enum: catch a reordering at compile time.
constexpr bool table_in_enum_order() {
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<int>(kOpTable[i].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kOpTable must follow the Op enum");
}  // namespace

const OpDef& op_def(Op op) { return kOpTable[static_cast<size_t>(op)]; }
std::span<const OpDef> all_ops() { return kOpTable; }

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Source: return "source";
    case OpKind::Generate: return "generate";
    case OpKind::Map: return "map";
    case OpKind::Reduce: return "reduce";
    case OpKind::ArgReduce: return "argreduce";
    case OpKind::Matmul: return "matmul";
    case OpKind::View: return "view";
    case OpKind::Cat: return "cat";
    case OpKind::Write: return "write";
    case OpKind::Window: return "window";
    case OpKind::Line: return "line";
    case OpKind::Index: return "index";
    case OpKind::Linalg: return "linalg";
    case OpKind::Fused: return "fused";
  }
  return "?";
}

}  // namespace tapestry
