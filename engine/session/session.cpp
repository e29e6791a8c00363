#include "engine/session/session.hpp"

#include <algorithm>
#include <cstdlib>

#include "engine/device/probe.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/stored_tensor.hpp"

namespace tapestry {

namespace {

int64_t& memory_limit() {
  static int64_t bytes = [] {
    const char* e = std::getenv("TAPESTRY_MEMORY_PER_RANK");
    return e ? std::max<int64_t>(0, std::atoll(e)) : int64_t(0);
  }();
  return bytes;
}

// The limit is the mesh's capacity, so the search prefers plans that fit it.
plan::Mesh with_limit(plan::Mesh m) {
  if (memory_limit() > 0) m.mem_bytes_per_rank = static_cast<double>(memory_limit());
  return m;
}

plan::Mesh machine_mesh(int ranks) {
  return with_limit(device::apply_device(plan::Mesh::this_machine(ranks), device::current()));
}

plan::Mesh& mesh_storage() {
  static plan::Mesh m = [] {
    int ranks = 1;
    if (const char* e = std::getenv("TAPESTRY_RANKS")) ranks = std::max(1, std::atoi(e));
    return machine_mesh(ranks);
  }();
  return m;
}

}  // namespace

const plan::Mesh& current_mesh() { return mesh_storage(); }

void set_current_ranks(int ranks) {
  user_check(ranks >= 1 && ranks <= 4096, "ranks must be in 1..4096, got ", ranks);
  mesh_storage() = machine_mesh(ranks);
}

void set_memory_per_rank(int64_t bytes) {
  user_check(bytes >= 0, "the memory per rank must be a number of bytes >= 0, got ", bytes);
  memory_limit() = bytes;
  mesh_storage() = machine_mesh(mesh_storage().ranks);
}

int64_t memory_per_rank() { return memory_limit(); }

plan::PlannedGraph plan_observed(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                                 plan::SearchOptions opts) {
  const int ranks = mesh.ranks;
  return plan::plan_observation(roots, mesh, std::move(opts), true,
                                [ranks](uint64_t id) -> const std::vector<plan::Shard>* {
                                  const StoredLayout* s = usable_stored(id, ranks);
                                  return s ? &s->shards : nullptr;
                                });
}

}  // namespace tapestry
