#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/store/environment.hpp"

using namespace tapestry;

TEST_CASE("engine.store.environment.bind_is_lazy_then_stored") {
  Environment e;
  NodeRef x = build::full({2}, 3, DType::F32);
  e.bind("x", x);
  CHECK(e.has_pending());
  CHECK(x->value == nullptr);
  evaluate({x});  // what engine/session's materialize does, then settles the binding
  e.settle("x", x);
  CHECK_FALSE(e.has_pending());
  CHECK(e.get("x")->value != nullptr);
  CHECK(e.get("x")->value->data<float>()[1] == 3);
}

TEST_CASE("engine.store.environment.a_failed_binding_keeps_the_previous_value") {
  Environment e;
  NodeRef one = build::full({1}, 1, DType::F32), two = build::full({1}, 2, DType::F32);
  e.bind("x", one);
  e.settle("x", one);
  e.bind("x", two);
  e.settle("x", nullptr);
  CHECK(e.get("x") == one);
  e.bind("y", two);
  e.settle("y", nullptr);  // no previous value: the name goes
  CHECK(e.get("y") == nullptr);
  CHECK(e.names() == std::vector<std::string>{"x"});
}

TEST_CASE("engine.store.environment.rejects_bad_names") {
  Environment e;
  CHECK_THROWS_AS(e.bind("1abc", build::full({1}, 0, DType::F32)), Error);
  CHECK_THROWS_AS(e.bind("a-b", build::full({1}, 0, DType::F32)), Error);
  CHECK(e.names().empty());
}

TEST_CASE("engine.store.environment.drop_and_names") {
  Environment e;
  e.bind("b", build::full({1}, 0, DType::F32));
  e.bind("a", build::full({1}, 1, DType::F32));
  CHECK(e.names() == std::vector<std::string>{"a", "b"});
  e.drop("a");
  CHECK(e.get("a") == nullptr);
  CHECK(e.names() == std::vector<std::string>{"b"});
}
