#include <doctest/doctest.h>

#include <set>
#include <string>

#include "engine/ir/op.hpp"

using namespace tapestry;

TEST_CASE("engine.ir.op.registry_is_complete") {
  std::set<std::string> names;
  for (const OpDef& d : all_ops()) {
    CHECK_MESSAGE(!d.doc.empty(), d.name);
    CHECK_MESSAGE(names.insert(std::string(d.name)).second, "duplicate op name ", d.name);
    CHECK(&op_def(d.op) == &d);
  }
  CHECK(static_cast<int>(names.size()) == kNumOps);
}

TEST_CASE("engine.ir.op.arity_matches_kind") {
  for (const OpDef& d : all_ops()) {
    if (d.kind == OpKind::Source || d.kind == OpKind::Generate) CHECK(d.arity == 0);
    if (d.kind == OpKind::Reduce || d.kind == OpKind::View) CHECK(d.arity == 1);
    if (d.kind == OpKind::Map) CHECK((d.arity >= 1 && d.arity <= 3));
  }
}
