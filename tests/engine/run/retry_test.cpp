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

TEST_CASE("retry: a transient failure is retried and the block then succeeds") {
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

TEST_CASE("retry: out of attempts, the error lists every attempt") {
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

TEST_CASE("retry: other errors are not retried") {
  PolicyScope scope({5, 0, 1});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  int calls = 0;
  CHECK_THROWS_WITH(run_retried(*n, [&] { ++calls, throw Error("bad shape"); }), "bad shape");
  CHECK(calls == 1);
}

TEST_CASE("retry: injected faults fail every EVERY-th block TIMES times, then it runs") {
  PolicyScope scope({3, 1, 2});
  const NodeRef n = build::full({4}, 1.0, DType::F32);
  const int64_t before = block_retries();
  int calls = 0;
  run_retried(*n, [&] { ++calls; });
  CHECK(calls == 1);  // the two injected failures came before the block ran
  CHECK(block_retries() - before == 2);
}
