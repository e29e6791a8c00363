// Retries of idempotent blocks. A block reads its inputs and writes a new output, so when it
// fails transiently (tapestry::Transient: an I/O error, a missed deadline) it can simply run
// again. Every evaluator and rank program runs its blocks through run_retried.
//   set_retry_policy({.attempts = 3, .fault_every = 5});   // the session, from its Config
//   run_retried(n, [&] { out = run_block(...); });           // throws after 3 failed attempts
// Out of attempts, the Error lists every attempt's error. Any other exception (a user error,
// out of memory, Ctrl-C) propagates at once: running again would fail again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/ir/node.hpp"

namespace tapestry {

struct RetryPolicy {
  int attempts = 3;         // TAPESTRY_BLOCK_RETRIES + 1: runs of a block before it fails
  int64_t fault_every = 0;  // TAPESTRY_BLOCK_FAULT=EVERY[:TIMES]: every EVERY-th block or
  int fault_times = 1;      // transfer of the process fails its first TIMES attempts (0: none)
};

void set_retry_policy(const RetryPolicy& p);  // process-wide, like the memory budget
const RetryPolicy& retry_policy();

// Runs `attempt` (one block of `n`) up to the policy's attempts while it throws Transient.
void run_retried(const Node& n, const std::function<void()>& attempt);
// The same for any idempotent step; what() names it in the error, e.g. "a transfer of %12 to
// rank 1" (a send that failed before it left can be posted again).
void run_retried(const std::function<std::string()>& what, const std::function<void()>& attempt);

// Transient failures retried in this process so far (tp.stats().block_retries).
int64_t block_retries();

}  // namespace tapestry
