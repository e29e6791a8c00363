// How much memory a rank may use for tensors when --memory-per-rank does not say.
//   int64_t per_rank = default_memory_per_rank(available_memory(), 4);   // 4 ranks on this machine
//   parse_byte_count("512M", bytes)                                       // K, M, G suffixes
// The session turns the per-rank figure into the process's budget (engine/ir/value.hpp) and the
// planner's capacity, so a request larger than the machine is refused before it is made.
#pragma once

#include <cstdint>
#include <string_view>

namespace tapestry {

// The memory this process can still get, in bytes: the least of /proc/meminfo's MemAvailable,
// the room left under its cgroup's memory.max, and the address space left under RLIMIT_AS
// (`ulimit -v`). 0 when none of them can be read.
int64_t available_memory();

// `available` less a margin (an eighth, at least 256 MiB) for everything that is not a tensor
// (Lua, the plan, libraries, the allocator's own caches), split evenly over the machine's ranks.
// At least 64 MiB; unknown (available 0): 16 GB, the planner's old model.
int64_t default_memory_per_rank(int64_t available, int ranks_on_machine);

// "4096", "512K", "512M", "2G" (also lower case) into bytes; false when malformed, negative or
// beyond 2^63.
bool parse_byte_count(std::string_view text, int64_t& bytes);

}  // namespace tapestry
