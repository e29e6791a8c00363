// libFuzzer target: the MPI plan wire decoders (engine/dist/plan_wire.hpp: a lowered plan and a
// plan's choices, which the worker lowers its own part from) on arbitrary bytes. Garbage must be
// rejected with an Error, never crash. With TAPESTRY_FUZZ_SEED_DIR set, a valid encoded plan (a
// matmul and a sum on 3 ranks) and its choices are written there first as the seed corpus.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <span>

#include "engine/dist/plan_wire.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower_rank.hpp"
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
  const std::vector<char> choices = encode_choices({plan::lowering_input(pg), pg.plan.choice});
  std::ofstream(std::string(dir) + "/choices_matmul_sum", std::ios::binary)
      .write(choices.data(), choices.size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
  try {
    decode_plan(bytes);
  } catch (const Error&) {
  }
  std::optional<PlanChoices> p;
  try {
    p = decode_choices(bytes);
  } catch (const Error&) {
    return 0;
  }
  // A worker lowers its part of what decodes: a bad plan fails that run (Error, or InternalError
  // when lower()'s own checks catch it), never the process. Small plans only: a valid message
  // may well ask for millions of blocks.
  int64_t blocks = 0;
  for (const auto& [id, c] : p->choice)
    blocks += std::min<int64_t>(c.block_count(p->input.mesh.ranks), 1 << 20);
  if (blocks > 4096) return 0;
  try {
    plan::lower_choice(p->input, p->choice, 0);
  } catch (const Error&) {
  } catch (const InternalError&) {
  }
  return 0;
}
