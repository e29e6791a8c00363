// libFuzzer target: the MPI plan wire decoder (engine/dist/plan_wire.hpp) on arbitrary bytes.
// Garbage must be rejected with an Error, never crash. With TAPESTRY_FUZZ_SEED_DIR set, a valid
// encoded plan (a matmul and a sum on 3 ranks) is written there first as the seed corpus.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>

#include "engine/dist/plan_wire.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("TAPESTRY_FUZZ_SEED_DIR");
  if (!dir) return 0;
  const NodeRef a = build::rand({7, 5}, 1, DType::F32), b = build::rand({5, 3}, 2, DType::F32);
  const NodeRef y = build::reduce(Op::Sum, build::matmul(a, b), {0}, false);
  plan::PlannerState planner;
  const plan::PlannedGraph pg = plan::plan_observation(planner, {y}, plan::Mesh::modelled(3), {});
  const std::vector<char> bytes = encode_plan(pg.plan.graph());
  std::ofstream(std::string(dir) + "/plan_matmul_sum", std::ios::binary).write(bytes.data(), bytes.size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    decode_plan(std::span<const char>(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
  }
  return 0;
}
