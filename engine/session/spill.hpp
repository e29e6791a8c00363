// Memory beyond RAM: when an allocation would pass --memory-per-rank, the session writes the
// coldest values it keeps to the spill directory and frees them, and reads them back when a
// plan needs them (issue 23; Dask's spilling at memory thresholds).
//   Spill spill(session);  spill.install();      // the process's memory pressure handler
//   spill.note(u);                               // 1 rank: u holds a value an observation made
//   { const Spill::Pin pin(spill, roots); evaluate(roots); }   // never spilled while in use
// Values are tracked only while a budget is given (--memory-per-rank, set_tracking): the
// default budget, the machine's memory, costs observations nothing.
// What is spilled, coldest (least recently used) first:
// - on several ranks, the pieces of stored tensors in this process's shard store
//   (ShardStore::spill_coldest) that no running plan holds: one file each under
//   SPILL_DIR/tapestry-PID/spill, read back by the next find (a plan's initial shard);
// - on one rank, the values of nodes observations computed (tp.eval results, printed values)
//   and the values evaluations kept on nodes of their graphs, that the current observation
//   does not use: written as .npy and replaced by a lazy read of
//   the file (the node's stored leaf, engine/ir/node.hpp), which the next observation that
//   needs it reads (engine/session/observe.cpp substitutes it).
// Plan intermediates are not spilled: a plan's own peak must fit (the planner checks it).
// A spill that cannot be written (a full disk; TAPESTRY_SPILL_FAULT=1) fails the allocation
// with OutOfMemory naming what could not be spilled; the value stays in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

class Session;

class Spill {
 public:
  explicit Spill(Session& s) : s_(s) {}
  ~Spill();  // gives up the handler if it is this one's
  Spill(const Spill&) = delete;
  Spill& operator=(const Spill&) = delete;

  void install();
  void set_tracking(bool on) { tracking_ = on; }  // a budget is given: note values, pin them
  bool tracking() const { return tracking_; }
  // Frees at least `need` bytes if it can; whether it freed any (the pressure handler).
  bool relieve(int64_t need);
  void note(const NodeRef& n);
  // Any node's value replaced by a file (observations must substitute).
  bool any_nodes() const { return spilled_nodes_ > 0; }

  // `leaf` stands for a value in an observation (engine/session/observe.cpp): counted as a
  // read back when it is a spilled value's file that is not in memory.
  void note_read(const NodeRef& leaf);

  struct Counts {
    int64_t spills = 0, bytes = 0, readbacks = 0;  // written out, their bytes, read back: in all
  };
  Counts counts() const;  // this process's, shard store and nodes together

  // The nodes of an observation (and their inputs): not spilled while it runs.
  class Pin {
   public:
    Pin(Spill& sp, const std::vector<NodeRef>& roots);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

   private:
    Spill& sp_;
    std::vector<NodeRef> pinned_;
  };

 private:
  struct Candidate {
    std::weak_ptr<const Node> node;
    uint64_t tick = 0;  // of its last use: the coldest goes first
  };
  int64_t spill_nodes(int64_t need);  // under mu_
  // Writes `value` (the nodes') as .npy under dir(): the lazy read that stands for it.
  NodeRef write(const std::vector<NodeRef>& nodes, const Value& value, int64_t bytes);
  void note_locked(const NodeRef& n);  // under mu_
  std::string dir() const;

  Session& s_;
  bool tracking_ = false;
  mutable std::mutex mu_;
  std::unordered_map<const Node*, Candidate> candidates_;  // each node once
  size_t swept_at_ = 64;                         // the gone are swept when the map doubles past this
  std::unordered_map<const Node*, int> pinned_;  // pins may nest (an observation within one)
  std::unordered_set<uint64_t> our_loads_;       // the lazy reads that stand for spilled values
  uint64_t tick_ = 0;
  int64_t spilled_nodes_ = 0, node_spills_ = 0, node_bytes_ = 0, node_reads_ = 0;
};

}  // namespace tapestry
