// The plan wire format: what a worker needs to run its part of a plan, as bytes.
//   std::vector<char> bytes = encode_plan(pg.plan.graph());   // rank 0
//   plan::ShardedGraph g = decode_plan(bytes);              // a worker: nodes rebuilt here
//   RankProgram me(g, transport);                          // ids are this process's own
//   encode_choices({plan::lowering_input(pg), pg.plan.choice});   // or only the choices:
//   PlanChoices p = decode_choices(bytes);  plan::lower_choice(p.input, p.choice, me);   // a worker
// Node ids are per process (a counter), so the message names nodes by rank 0's ids and the
// decoder maps each to the node it rebuilds with make_node, rewriting every id in the graph.
// A node that holds a value on rank 0 (a Source, a materialized result) travels as a
// placeholder of its shape and dtype: its data is held whole on rank 0 and the plan's
// transfers carry the slices other ranks read. Checked on receipt: magic, version, length,
// checksum, and every count, index, rank and op; a bad message throws Error, never crashes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/plan/search.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry {

inline constexpr uint32_t kPlanWireMagic = 0x4c505054;     // "TPPL"
inline constexpr uint32_t kPlanChoicesMagic = 0x48435054;  // "TPCH"
// 2: the linalg ops; 3: the line ops (sort, scans); 4: the choices, the load op, the index ops
// 5: exchanges (collective steps); 6: bands; 7: each exchange's and combine's place in the
// transfer order
inline constexpr uint32_t kPlanWireVersion = 7;

std::vector<char> encode_plan(const plan::ShardedGraph& g);

// Throws Error ("plan message rejected: ...") when the bytes are not a plan this build reads.
// `ids`, when given, receives each node the message names, by the sender's id (the head of a
// driver's job gives the driver's leaves their values and sends the roots' values back by it).
using WireIds = std::unordered_map<uint64_t, NodeRef>;
plan::ShardedGraph decode_plan(std::span<const char> bytes, WireIds* ids = nullptr);

// A plan as its choices: what each rank lowers its own part from (plan::lower_choice), a few
// bytes per op where the lowered plan lists every rank's blocks and transfers. The mesh travels
// as its rank count (lowering reads nothing else of it).
struct PlanChoices {
  plan::LoweringInput input;
  std::map<uint64_t, plan::Candidate> choice;
};
std::vector<char> encode_choices(const PlanChoices& p);
// Checked like decode_plan, and each choice against its op: parts per index dim within its
// extent, ranks on the mesh, a known combine mode.
PlanChoices decode_choices(std::span<const char> bytes, WireIds* ids = nullptr);

}  // namespace tapestry
