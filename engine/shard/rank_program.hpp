// Running a sharded graph: every rank executes its step list; slices move through a transport.
//   plan::Plan p = plan::search(topo, initial, roots, plan::Mesh::modelled(4));
//   RunReport r = run_plan(p.graph());      // 4 virtual ranks over loopback; roots get their values
//   RankProgram me(g, mpi_endpoint);  while (!me.done()) me.advance();   // one rank of an MPI job
// The executor trusts the plan's structure (verify() checks it) but not blindly: a slice a
// block needs and its rank lacks, or a plan that cannot finish, throws InternalError naming the
// rank and the step, and a failed run leaves every root unchanged.
// Combines run point to point (send + try_recv), or as collectives where the transport has
// them and the combine is regular (engine/comm/collective_plan.hpp): a started collective is
// polled like a receive, so the loop keeps its shape.
// With a device (a GPU, or the simulated one of the tests) a rank runs every block the device
// takes there (run_block over its DeviceBackend; backend_takes) and keeps its output in device
// memory; data crosses between host and device only where a reader on the other side needs it
// (rank_store.hpp): slices sent over MPI, partials merged on the host, CPU-only blocks and the
// gather to rank 0.
// With device peers as well (NCCL between GPUs, engine/device/peers.hpp) every transfer goes from
// device to device; each rank posts its sends and receives in the plan's transfer order, which
// NCCL's order-matching needs and which cannot deadlock (docs/gpu.md). Where the peers merge
// (DevicePeers::can_reduce), the combines that can run as collectives run as theirs, on the
// devices (rank_peer_combine.cpp): partials never leave device memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/comm/collective_plan.hpp"
#include "engine/comm/transport.hpp"
#include "engine/device/backend.hpp"
#include "engine/device/peers.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/moves.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/plan/step_slices.hpp"
#include "engine/shard/rank_store.hpp"
#include "engine/store/shard_store.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

// Which of a plan's values live in the shard store (engine/store/shard_store.hpp), so named
// tensors stay where they were computed: initial[i] != 0 reads g.initial[i] from the store
// under that key instead of a node's value; roots[i] != 0 keeps root i's result shards in
// the store under that key instead of gathering them to rank 0. Empty vectors: none.
// An exchange's kind as the transports name it, and the bytes of slice b of n (rank_exchange.cpp).
comm::ExchangeKind exchange_kind(plan::Exchange::Kind k);
int64_t slice_bytes(const Node& n, const poly::Box& b);
// The payload of `box` of n's output, trailing dims beyond the box counted whole (rank_program.cpp).
int64_t box_payload_bytes(const Node& n, const poly::Box& box);

struct StoreKeys {
  std::vector<uint64_t> initial;                                           // one per g.initial, or empty
  std::vector<uint64_t> roots;                                             // one per g.roots, or empty
  uint64_t root_key(uint64_t root_id, const plan::ShardedGraph& g) const;  // 0: gathered
};

struct RunReport {
  int64_t blocks = 0;         // blocks run, over all ranks
  int64_t messages = 0;       // transfers, partials and gathered outputs
  int64_t bytes = 0;          // their payload
  double move_s = 0;          // seconds rank 0 (loopback: all ranks) spent moving them
  int64_t device_blocks = 0;  // of the blocks, those run on a device
  int64_t bytes_to_device = 0, bytes_from_device = 0;  // host <-> device copies
  // What the plan's moves carried, as the executors counted them: transfers' payload (over
  // the transport or between devices), combines' (point to point: what was sent; a collective:
  // plan::combine_bytes, counted once, by its lowest member: MPI does not say what its
  // algorithm sent), and the result shards gathered to rank 0 after the plan. The first two
  // add up to the plan's bytes_moved (cost_of).
  int64_t transfer_bytes = 0, combine_bytes = 0, gathered_bytes = 0;
};

// One rank's part of a plan. Its store maps (tensor id, box) to the data: the initial shards
// (views of the nodes' values), received slices, block outputs and combined values.
class RankProgram {
 public:
  // Joins the transport's groups for the plan's collectives first (every rank of a job
  // constructs its program at plan start, before anything that can fail). dev: the rank's
  // device, or nullptr to run every block on the CPU. store: the session's shard store, which
  // `keys` name pieces of (needed when they name any).
  RankProgram(const plan::ShardedGraph& g, comm::Transport& t, StoreKeys keys = {},
              DeviceBackend* dev = nullptr, ShardStore* store = nullptr);
  // A run that did not keep its outputs takes back the result shards it handed to the store.
  ~RankProgram();
  RankProgram(const RankProgram&) = delete;
  RankProgram& operator=(const RankProgram&) = delete;

  // Runs every step of this rank that can run, each as soon as the earlier steps it depends
  // on have run (find_dependencies): a block whose inputs are here runs while a receive it
  // does not read still waits, and a send goes out while an unrelated receive is pending, so
  // no rank waits on a transfer it does not need. Steps are taken from the first one not run,
  // at most kLookahead ahead of it (memory: what runs early is freed only once every step
  // before its last reader has run). Whether any step ran. Checks the cancel flag before
  // every step (throws Cancelled). With device peers the steps run in program order (NCCL's
  // transfers are matched in order), and so do those of an out-of-core plan
  // (ShardedGraph::in_bands: its memory is counted in program order).
  bool advance();
  static constexpr size_t kLookahead = 1024;
  // Every transfer goes from device to device through `peers` (requires a device); call
  // before the first advance(), on every rank of the run alike.
  void use_device_peers(comm::DevicePeers* peers);

  // All steps ran and every collective this rank started has completed (a rank that only
  // contributes to a reduce goes on at once, like after a send, but may not leave before it),
  // and so has every device send.
  bool done() const {
    return pc_ == steps().size() && trailing_.empty() && peer_sends_.empty() && peer_exchange_.empty() &&
           peer_exchanging_.empty() && peer_combining_.empty();
  }
  int64_t steps_run() const { return steps_run_; }
  // This rank's share of RunReport's transfer_bytes, combine_bytes and gathered_bytes.
  int64_t transfer_bytes() const { return transfer_bytes_; }
  int64_t combine_bytes() const { return combine_bytes_; }
  int64_t gathered_bytes() const { return gathered_bytes_; }
  std::string waiting_on() const;  // the step it waits at, for deadlock reports

  // After done(): every rank sends the result shards it holds to rank 0; rank 0 then
  // assembles each root's full, contiguous value (false while a shard has not arrived).
  void send_outputs();
  bool gather_outputs(std::map<uint64_t, std::shared_ptr<Value>>& roots);
  // After done(), once the run succeeded everywhere: puts this rank's result shards of kept
  // roots into the shard store (roots kept are neither sent nor gathered).
  void keep_outputs();

  int64_t blocks_run() const { return blocks_run_; }
  int64_t device_blocks_run() const { return device_blocks_; }
  // Device peers: the sends this rank posted and their bytes.
  int64_t peer_messages() const { return peer_messages_; }
  int64_t peer_bytes() const { return peer_bytes_; }
  // Bytes this rank copied host -> device and device -> host.
  int64_t bytes_to_device() const { return store_.uploaded(); }
  int64_t bytes_from_device() const { return store_.downloaded() + bytes_from_device_; }
  const RankStore& data() const { return store_; }
  // Combines of this plan that run as collectives (the same on every rank): the transport's,
  // and of those with device peers that merge, the ones that run as the peers' instead.
  int collective_combines() const { return coll_.count(); }
  int peer_combines() const {
    return static_cast<int>(std::count(peer_combine_.begin(), peer_combine_.end(), true));
  }
  // Exchanges of this plan (of this rank) that run as the transport's collectives.
  int collective_exchanges() const { return coll_.exchange_count(); }
  // Whether a collective this rank started has not completed. MPI advances a non-blocking
  // collective only inside MPI calls on each member (a long message takes many rounds), so a
  // waiting loop should then yield and poll again rather than sleep.
  bool collectives_in_flight() const {
    return !running_.empty() || !scatters_.empty() || !trailing_.empty() || !peer_sends_.empty() ||
           !peer_recvs_.empty() || !exchanging_.empty() || !peer_exchanging_.empty() ||
           !peer_combining_.empty();
  }
  // Seconds this rank spent in sends, receives, combines and output shards (tp.stats().time_move).
  double move_seconds() const { return move_us_ * 1e-6; }

  // Hooks. `stop` is asked before every step, with the cancel flag (a worker: has rank 0
  // aborted?); true throws Cancelled. Each block run advances `p` by `weight`, each send by
  // its bytes. Steps are traced (engine/telemetry/trace.hpp) while a trace runs.
  void set_stop_check(std::function<bool()> stop) { stop_ = std::move(stop); }
  void report_progress(Progress* p, double weight) { progress_ = p, block_weight_ = weight; }

 private:
  const std::vector<plan::Step>& steps() const { return g_.steps[me_]; }
  std::string waiting_step() const;  // waiting_on's step
  bool step(const plan::Step& s);    // false: must wait
  void release_after(size_t i);      // frees what step i was the last reader of
  // Out of core (plan/bands.hpp, plan/step_slices.hpp): pieces go piece by piece. An initial
  // shard of a stored tensor is taken from the shard store (read back from disk if it was
  // spilled) only when a step reading it runs, and given back after its last reader; a kept
  // root's result shard goes to the shard store after its last reader here (where it may be
  // spilled), not at the end; every other piece is freed after the last step reading it.
  void hold_initial(size_t i);  // g.initial[i], from the shard store when keyed
  void hold_lazy(size_t step);  // the lazily held initial shards step `step` may read
  struct Lazy {
    size_t initial, first, last;
    bool held = false;
  };
  std::vector<Lazy> lazy_;
  std::vector<std::vector<plan::PieceLife>> piece_frees_;  // per step: pieces it last reads
  std::vector<size_t> handed_;                             // outputs given to the store early
  std::vector<uint64_t> handed_keys_;
  bool outputs_kept_ = false;
  void number_messages();  // transfer_tag_, partial_tag_
  // deps_[i]: the earlier steps of this rank that step i waits for: those that make (run,
  // receive or combine into) a slice it reads overlapping it, a combine's own partials, and
  // the previous collective (members of a communicator start its collectives in one order).
  void find_dependencies();
  bool ready(size_t i) const;
  void run(size_t b);
  void run_once(size_t b);  // one attempt of run (engine/run/retry.hpp)
  void run_on_device(size_t b);
  void send(size_t t);
  bool recv(size_t t);
  bool combine(size_t c);
  bool combine_collective(size_t c);
  bool combine_scatter(size_t c);
  // An Exchange step (rank_exchange.cpp): as the transport's collective, or its transfers.
  bool exchange(size_t e);
  bool exchange_collective(size_t e);
  bool exchange_p2p(size_t e);
  std::vector<std::vector<poly::Box>> gathered_parts(size_t e) const;
  // With device peers an Exchange step only posts its part (peers.hpp: every rank posts in
  // transfer order, which the exchange's program position need not match): its receives
  // complete, and a relay's sends go out, as later steps need them (settle_exchanges).
  bool settle_exchanges(const plan::Step& next);
  std::vector<size_t> peer_exchange_;  // this rank's exchange transfers still to complete
  // With device peers that have exchanges (DevicePeers::has_exchanges), an exchange the
  // transport would run as a collective runs as the peers' grouped collective instead
  // (rank_peer_exchange.cpp): one entry of the posting order, where the plan places it
  // (plan::Exchange::after), posted by a member that contributes once its step was reached,
  // by a broadcast's receiver at once; its step goes on at once, and the steps that read
  // what it brings wait in settle_exchanges, as for its transfers.
  bool on_peers(size_t e) const { return e < peer_collective_.size() && peer_collective_[e]; }
  bool exchange_on_peers(size_t e);
  void post_peer_exchange(size_t e);  // from post_peer_ops, at its turn
  bool settle_peer_exchanges();       // unpacks the completed ones; whether any completed
  struct PeerExchange {
    comm::ExchangeSpec spec;
    std::vector<poly::Box> packs;  // what this rank contributes, in packing order
    struct Piece {
      poly::Box box;
      int64_t at;  // bytes into `out`
      bool keep;   // received from another member (an all-gather's own part is not)
    };
    std::vector<Piece> unpacks;
    int64_t plan_bytes = 0;                    // what the plan's transfers from this rank carry (tp.stats)
    std::unique_ptr<comm::Collective> handle;  // once posted
    DeviceView in, out;
  };
  PeerExchange& peer_exchange_layout(size_t e);
  std::vector<bool> peer_collective_;                        // per exchange
  std::unordered_set<size_t> exchange_reached_;              // on peers, step reached, not posted yet
  std::map<size_t, PeerExchange> peer_exchanging_;           // on peers: laid out, not yet unpacked
  std::unordered_set<size_t> peer_exchanged_;                // on peers: unpacked
  static constexpr size_t kExchangeEntry = size_t(1) << 63;  // peer_order_: an exchange, not a transfer
  // With device peers that merge (rank_peer_combine.cpp), a combine that can run as a
  // collective runs as the peers' reduce, all-reduce or reduce-scatter (every combine of one
  // in a single collective): one entry of the posting order, where the plan places it
  // (plan::Combine::after), posted once this rank's step of it (of any of a reduce-scatter's
  // combines) was reached. A member that receives waits at its step, like for a transport's
  // collective; one that only contributes goes on. Partials of nodes combined there stay on
  // the device (device_partials_).
  bool on_peers_combine(size_t c) const { return c < peer_combine_.size() && peer_combine_[c]; }
  size_t peer_combine_key(size_t c) const;  // the collective c is part of (a reduce-scatter's first)
  bool combine_on_peers(size_t c);
  void post_peer_combine(size_t key);  // from post_peer_ops, at its turn
  DeviceView device_contribution(size_t c);
  void place_peer_combines(std::vector<std::tuple<size_t, size_t, size_t, size_t>>& order);
  bool reap_peer_combines();
  struct PeerCombine {
    comm::ReduceSpec spec;
    DeviceView in, out;
    std::unique_ptr<comm::Collective> handle;  // once posted
    bool receives = false;
  };
  comm::CollectivePlan peer_coll_;                          // routes of combines over the peers
  std::vector<bool> peer_combine_;                          // per combine
  std::unordered_set<uint64_t> peer_combined_nodes_;        // nodes whose partials stay on the device
  std::unordered_set<uint64_t> host_combined_nodes_;        // nodes with a combine merged on the host
  std::unordered_map<size_t, DeviceView> device_partials_;  // block -> its partial, on the device
  std::unordered_set<size_t> combine_reached_;              // keys: step reached, not posted yet
  std::map<size_t, PeerCombine> peer_combining_;            // keys: posted, not complete
  std::unordered_set<size_t> peer_combined_;                // keys: complete
  static constexpr size_t kCombineEntry = size_t(1) << 62;  // peer_order_: a combine's collective
  View partial_over(size_t c, size_t p);                    // partial p of combine c over its region
  View contribution(size_t c);                              // this rank's input to combine c's collective
  bool reap_trailing();
  // Device peers: posts this rank's transfers in transfer order while the next one can be
  // posted (a send once its step was reached, a receive at once).
  void post_peer_ops();
  bool recv_from_peer(size_t t);
  const Node& node(uint64_t id) const;
  const poly::Signature& sig(uint64_t id);
  // The slice `need` of a tensor on the host (rank_store.hpp).
  View gather(uint64_t tensor, const poly::Box& need) { return store_.host(tensor, need); }
  void hold(uint64_t tensor, poly::Box box, View v) { store_.hold(tensor, std::move(box), std::move(v)); }
  std::string describe(uint64_t tensor) const;
  // Banded pairs: a stencil (Correlate) block whose output only one map block of this rank
  // reads, exactly, is not run alone (CPU ranks only: a device runs both as kernels). The map
  // block computes it band by band of rows (run_banded): the stencil's output never exists
  // whole, its input is read in place (only the band at a seam between held pieces is
  // assembled), and the map writes its output once.
  void find_banded_pairs();
  void run_banded(size_t b);
  std::unordered_map<size_t, size_t> banded_into_;  // stencil block -> the map block computing it
  std::unordered_map<uint64_t, size_t> deferred_;   // stencil tensor -> its block

  const plan::ShardedGraph& g_;
  comm::Transport& t_;
  StoreKeys keys_;
  ShardStore* shards_;
  int me_;
  DeviceBackend* dev_;
  size_t pc_ = 0;                          // the first step not run yet (all before it have run)
  std::vector<bool> ran_;                  // per step
  std::vector<std::vector<size_t>> deps_;  // per step (find_dependencies)
  int64_t steps_run_ = 0;
  int64_t transfer_bytes_ = 0, combine_bytes_ = 0, gathered_bytes_ = 0;
  plan::Moves moves_;  // what each transfer and combine is part of (trace names)
  int64_t blocks_run_ = 0;
  int64_t device_blocks_ = 0;
  int64_t bytes_from_device_ = 0;  // partials
  double move_us_ = 0;
  std::function<bool()> stop_;
  Progress* progress_ = nullptr;
  double block_weight_ = 1;
  void trace_step(const plan::Step& s, double t0_us, double dur_us);
  void trace_exchange(const plan::Step& s, trace::Event& e);
  std::unordered_map<uint64_t, const Node*> nodes_;
  std::vector<uint64_t> transfer_tag_;                               // per transfer of this rank
  std::map<std::tuple<size_t, size_t, int>, uint64_t> partial_tag_;  // (combine, block, to)
  std::map<std::pair<size_t, int>, uint64_t> result_tag_;            // (combine, to): its value
  // Whether `rank`'s partials of combine c all cover its `out`: it then sends them merged, as
  // one message (tagged as its first partial), else each partial's part of `out` alone.
  bool sends_merged(size_t c, int rank);
  std::unordered_map<uint64_t, poly::Signature> sigs_;
  std::unordered_set<uint64_t> split_;  // nodes whose blocks leave partials (they have combines)
  RankStore store_;
  std::vector<std::vector<uint64_t>> frees_;  // per step: what it last reads (plan::last_reads)
  std::unordered_set<uint64_t> kept_;         // never freed before the plan ends
  std::unordered_map<size_t, std::shared_ptr<Value>> partials_;          // block index -> its partial
  std::unordered_set<size_t> combine_started_;                           // partials sent out
  std::map<std::pair<size_t, size_t>, std::shared_ptr<Value>> arrived_;  // (combine, block)
  std::map<size_t, std::shared_ptr<Value>> outputs_in_;                  // rank 0: output shards
  comm::CollectivePlan coll_;
  struct Running {
    std::unique_ptr<comm::Collective> handle;
    std::shared_ptr<Value> out;
    std::shared_ptr<Value> in;  // a reduce-scatter's packed contribution, kept while MPI reads it
  };
  std::map<size_t, Running> running_;        // combine -> its collective here
  std::map<size_t, Running> scatters_;       // reduce-scatter (its first combine) -> the collective
  std::unordered_set<size_t> scatter_done_;  // reduce-scatters whose piece this rank holds
  std::vector<std::unique_ptr<comm::Collective>> trailing_;  // contributed, not yet complete
  struct Exchanging {
    std::unique_ptr<comm::Collective> handle;
    comm::ExchangeSpec spec;
    std::shared_ptr<std::vector<char>> out;
  };
  std::map<size_t, Exchanging> exchanging_;              // exchange -> its collective here
  std::map<size_t, std::vector<size_t>> exchange_left_;  // point to point: transfers not done
  struct PeerOp {
    std::unique_ptr<comm::Collective> handle;
    DeviceView buf;  // the data sent, or the buffer received into
  };
  comm::DevicePeers* peers_ = nullptr;
  std::vector<size_t> peer_order_;                 // this rank's transfers (and exchanges), posting order
  size_t peer_next_ = 0;                           // the first of them not posted yet
  std::unordered_set<size_t> send_reached_;        // sends whose step ran, not posted yet
  std::vector<PeerOp> peer_sends_;                 // posted, not complete
  std::unordered_map<size_t, PeerOp> peer_recvs_;  // transfer -> its posted receive
  int64_t peer_messages_ = 0, peer_bytes_ = 0;
};

// Runs every rank of `g` over a loopback transport in this process, round-robin: a rank runs
// until it must wait, then the next. On success sets each root's value (gathered on rank 0);
// on any throw no root is changed. Throws InternalError on a deadlock or a missing slice,
// Error / Cancelled as the blocks do, each message prefixed with the failing rank.
// devices: none (the CPU), one device for every rank, or one per rank (tests). store: the
// shard store holding every rank's pieces, when `keys` name any.
RunReport run_plan(const plan::ShardedGraph& g, const StoreKeys& keys = {},
                   const std::vector<DeviceBackend*>& devices = {}, ShardStore* store = nullptr);
// The same, each rank r running only parts[r], its own part of the plan (plan::lower_rank), as
// the ranks of a distributed run do.
RunReport run_plan_parts(const std::vector<plan::ShardedGraph>& parts, const StoreKeys& keys = {},
                         const std::vector<DeviceBackend*>& devices = {}, ShardStore* store = nullptr);

}  // namespace tapestry
