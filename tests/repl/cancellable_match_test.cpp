#include "repl/cancellable_match.hpp"

#include <doctest/doctest.h>

using namespace tapestry::repl;

TEST_CASE("repl.cancellable_match.pattern_cost") {
  CHECK(pattern_cost("abc", 1000) == doctest::Approx(1001));       // each start, once
  CHECK(pattern_cost("%w+", 99) == doctest::Approx(100.0 * 100));  // one quantifier
  CHECK(pattern_cost(".-.-b", 2000) > 1e9);                        // the slow one
  CHECK(pattern_cost("[%-+*]x", 10) == doctest::Approx(11));       // inside a class: literal
  CHECK(pattern_cost("%*%+%-%?", 10) == doctest::Approx(11));      // escaped: literal
  CHECK(pattern_cost("[]-]-", 10) == doctest::Approx(11.0 * 11));  // "]" first in a class
  CHECK(pattern_cost("%b()", 10) == doctest::Approx(11.0 * 11));   // a balance scans ahead
}
