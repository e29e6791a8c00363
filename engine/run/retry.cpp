#include "engine/run/retry.hpp"

#include <atomic>
#include <string>

#include "engine/ir/error.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/transient.hpp"

namespace tapestry {

namespace {

RetryPolicy g_policy;
std::atomic<int64_t> g_blocks{0};   // blocks begun, for the injected faults
std::atomic<int64_t> g_retries{0};  // attempts that failed transiently and were run again

}  // namespace

void set_retry_policy(const RetryPolicy& p) {
  g_policy = p;
  if (g_policy.attempts < 1) g_policy.attempts = 1;
  if (g_policy.fault_times < 1) g_policy.fault_times = 1;
}

const RetryPolicy& retry_policy() { return g_policy; }

int64_t block_retries() { return g_retries.load(); }

void run_retried(const Node& n, const std::function<void()>& attempt) {
  run_retried([&n] { return cat_str(op_def(n.op).name, ": a block"); }, attempt);
}

void run_retried(const std::function<std::string()>& what, const std::function<void()>& attempt) {
  const RetryPolicy p = g_policy;
  // Blocks may run on several threads (virtual ranks): the count is shared, the choice of a
  // block or transfer to fail is its number.
  const int64_t number = ++g_blocks;
  const bool faulty = p.fault_every > 0 && number % p.fault_every == 0;
  std::string errors;
  for (int a = 1; a <= p.attempts; ++a) {
    try {
      if (faulty && a <= p.fault_times)
        throw Transient(cat_str("injected transient failure #", number, " (TAPESTRY_BLOCK_FAULT)"));
      attempt();
      return;
    } catch (const Transient& e) {
      errors += cat_str(errors.empty() ? "" : "; ", "attempt ", a, ": ", e.what());
      if (a < p.attempts) ++g_retries;
    }
  }
  throw Error(cat_str(what(), " failed ", p.attempts, " time(s), every attempt transiently (", errors, ")"));
}

}  // namespace tapestry
