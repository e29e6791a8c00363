// What the single-rank evaluator decides from a graph's structure alone, kept for the next graph
// of the same structure.
//   ScheduleLease s(roots, nodes);  // s.get(): an earlier graph's schedule that fits, nodes bound to its
//   slots if (!s.get()) { plan::group_fusion(roots, g); ...; s.reset(make_schedule(g, roots)); }
// A loop of small observations (a CG iteration observes five graphs of a few nodes, each shaped
// like the previous iteration's) then skips the graph walk's index, the fusion rules, the slot
// set-up and the building of each map program, and re-binds only what changes between
// iterations: the nodes, the leaves' values and the constants' values (a Full node's number
// is a parameter, not structure).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/fusion_groups.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

// What a node must be to take a slot: its op, dtype and shape, whether it holds a value, and
// unless it does, its number of inputs and its attributes, except a Full constant's number.
struct SlotKey {
  Op op = Op::Full;
  DType dtype = DType::F32;
  bool valued = false;
  int inputs = 0;
  Shape shape;
  Attrs attrs;  // empty for a valued node; a Full node's keeps only its dtype
};

// The decisions for one node.
struct SlotPlan {
  int uses = 0;         // input edges that read it
  int moments_of = -1;  // sum(x): the slot of the sum((x - m)^2) it computes too
  int absorbs = -1;     // a reduction: the slot of the map it computes chunk by chunk
  int program = -1;     // a map run as one program (or a map a reduction absorbs): its index in programs
  bool root = false;
  bool inlined = false;
  bool banded = false;
};

// A map program as built once: its instructions are kept; each run re-binds its leaves (the
// values of leaf_slots) and its constants (the numbers of the Full nodes in constants).
struct ProgramPlan {
  bool built = false;
  cpu::MapProgram program;
  std::vector<int> leaf_slots;                 // per leaf register, the slot it reads
  std::vector<std::pair<int, int>> banded;     // {register, slot} of stencils computed per band
  std::vector<std::pair<int, int>> constants;  // {instruction, slot of its Full node}
  cpu::PreparedMap prepared;                   // its registers for the CPU's run_map
};

// The graph as plan::discover_graph found it (slots by discovery index) and the decisions.
struct Schedule {
  uint64_t head = 0;  // head_of(roots): most schedules that cannot bind are passed over by it
  std::vector<SlotKey> keys;
  std::vector<int> first_edge, edges, order;  // as plan::FusionGroups
  std::vector<int> root_slots;                // the slot of each root, in the order given
  std::vector<SlotPlan> slots;
  std::vector<ProgramPlan> programs;
  uint64_t fused_maps = 0;
};

// The roots' ops, dtypes, ranks, and their inputs' and inputs' inputs' ops and whether they
// hold values, folded into a word: graphs of one structure have the same.
uint64_t head_of(const std::vector<NodeRef>& roots);

// Graphs of more nodes get no schedule kept: their set-up is small beside their kernels.
inline constexpr int kMaxScheduledNodes = 64;

// The structure part of a schedule for the graph g found from roots (its decisions are the
// caller's to fill); null when g is too large to keep.
std::unique_ptr<Schedule> make_schedule(const plan::FusionGroups& g, const std::vector<NodeRef>& roots);

// True when the graph of `roots` has s's structure: then nodes[i] is the node of slot i. Walks
// the slots in discovery order, each node's inputs against its slot's edges. Two slots may
// take one node (an earlier graph's two leaves that are one tensor now): each computes it, as
// in that graph, so the results are the same.
bool bind_schedule(const Schedule& s, const std::vector<NodeRef>& roots, std::vector<const Node*>& nodes);

// Takes the first of this thread's kept schedules that binds the roots out of the cache (an
// evaluation inside another one, of the same structure, then decides its own), and puts it
// back as the most recent when the lease ends. The cache keeps the kScheduleCacheSize most
// recent ones.
inline constexpr size_t kScheduleCacheSize = 32;
class ScheduleLease {
 public:
  ScheduleLease(const std::vector<NodeRef>& roots, std::vector<const Node*>& nodes);
  ~ScheduleLease();
  ScheduleLease(const ScheduleLease&) = delete;
  ScheduleLease& operator=(const ScheduleLease&) = delete;
  Schedule* get() const { return s_.get(); }
  void reset(std::unique_ptr<Schedule> s) { s_ = std::move(s); }

 private:
  std::unique_ptr<Schedule> s_;
};

// Schedules kept on this thread (for tests).
size_t cached_schedules();

}  // namespace tapestry
