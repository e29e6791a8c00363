// run_retried: a Transient failure runs the block again, up to the policy's attempts, and then
// fails with every attempt's error; any other error is not retried.
#include <doctest/doctest.h>

#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/transient.hpp"
#include "engine/run/retry.hpp"

using namespace tapestry;

namespace {

// Restores the process-wide policy however the test ends.
struct PolicyScope {
  explicit PolicyScope(RetryPolicy p) : saved(retry_policy()) { set_retry_policy(p); }
  ~PolicyScope() { set_retry_policy(saved); }
  RetryPolicy saved;
};

}  // namespace

TEST_CASE("engine.run.retry.a_transient_failure_is_retried_then_succeeds") {
  PolicyScope scope({3, 0, 1});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  const int64_t before = block_retries();
  int calls = 0;
  run_retried(*n, [&] {
    if (++calls < 3) throw Transient("disk busy");
  });
  CHECK(calls == 3);
  CHECK(block_retries() - before == 2);
}

TEST_CASE("engine.run.retry.out_of_attempts_the_error_lists_every_attempt") {
  PolicyScope scope({2, 0, 1});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  int calls = 0;
  std::string what;
  try {
    run_retried(*n, [&] { throw Transient(cat_str("timeout ", ++calls)); });
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(calls == 2);
  CHECK(what.find("full: a block failed 2 time(s)") != std::string::npos);
  CHECK(what.find("attempt 1: timeout 1; attempt 2: timeout 2") != std::string::npos);
}

TEST_CASE("engine.run.retry.other_errors_are_not_retried") {
  PolicyScope scope({5, 0, 1});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  int calls = 0;
  CHECK_THROWS_WITH(run_retried(*n, [&] { ++calls, throw Error("bad shape"); }), "bad shape");
  CHECK(calls == 1);
}

TEST_CASE("engine.run.retry.injected_faults_fail_a_block_times_then_it_runs") {
  PolicyScope scope({3, 1, 2});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  const int64_t before = block_retries();
  int calls = 0;
  run_retried(*n, [&] { ++calls; });
  CHECK(calls == 1);  // the two injected failures came before the block ran
  CHECK(block_retries() - before == 2);
}

TEST_CASE("engine.run.retry.any_step_named_only_when_it_fails") {
  PolicyScope scope({2, 0, 1});
  int named = 0;
  run_retried([&] { return ++named, std::string("never"); }, [] {});
  CHECK(named == 0);
  CHECK_THROWS_WITH(
      run_retried([] { return std::string("a transfer of %7 to rank 2"); },
                  [] { throw Transient("peer busy"); }),
      "a transfer of %7 to rank 2 failed 2 time(s), every attempt transiently (attempt 1: peer busy; "
      "attempt 2: peer busy)");
}
