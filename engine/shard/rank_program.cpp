#include "engine/shard/rank_program.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "engine/comm/loopback.hpp"
#include "engine/device/host_backend.hpp"
#include "engine/device/peers_local.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/peak_memory.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/retry.hpp"
#include "engine/run/run_block.hpp"
#include "engine/store/shard_store.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/trace.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using plan::Step;
using poly::Box;

int64_t box_payload_bytes(const Node& n, const Box& box) {
  int64_t e = box.empty() ? 0 : numel(box.extents());
  for (size_t d = static_cast<size_t>(box.rank()); d < n.shape.size(); ++d) e *= n.shape[d];
  return e * static_cast<int64_t>(dtype_size(n.dtype));
}

namespace {

// Rethrows the exception in flight with "rank r: " in front, as a worker would report it.
[[noreturn]] void rethrow_on(int rank) { rethrow(current_failure(rank)); }

}  // namespace

uint64_t StoreKeys::root_key(uint64_t root_id, const plan::ShardedGraph& g) const {
  for (size_t i = 0; i < roots.size() && i < g.roots.size(); ++i)
    if (g.roots[i] == root_id) return roots[i];
  return 0;
}

RankProgram::RankProgram(const plan::ShardedGraph& g, comm::Transport& t, StoreKeys keys, DeviceBackend* dev,
                         ShardStore* store)
    : g_(g),
      t_(t),
      keys_(std::move(keys)),
      shards_(store),
      me_(t.rank()),
      dev_(dev),
      store_(me_, dev, [this](uint64_t tensor) { return describe(tensor); }) {
  internal_check(t.size() == g.num_ranks && me_ >= 0 && me_ < g.num_ranks);
  internal_check(keys_.initial.empty() || keys_.initial.size() == g.initial.size());
  internal_check(keys_.roots.empty() || keys_.roots.size() == g.roots.size());
  internal_check(shards_ || (keys_.initial.empty() && keys_.roots.empty()));
  // Before anything that can throw: the other members of a group wait for this rank here.
  coll_ = comm::plan_collectives(g, t);
  t.join_groups(coll_.groups);
  for (const NodeRef& n : g.nodes) nodes_[n->id] = n.get();
  moves_ = plan::classify_moves(g);
  for (const plan::Combine& c : g.combines) split_.insert(c.node);
  number_messages();
  // The initial shards are windows on the nodes' values or on stored shards: nothing is
  // copied to start. A stored shard some step reads is taken only when one does (hold_lazy).
  const std::vector<plan::PieceLife> lives = plan::piece_lives(g, me_);
  std::vector<bool> later(g.initial.size(), false);
  piece_frees_.resize(steps().size());
  for (const plan::PieceLife& l : lives) {
    if (l.initial >= 0) {
      const auto i = static_cast<size_t>(l.initial);
      if (keys_.initial.empty() || keys_.initial[i] == 0) continue;  // a window on a value
      later[i] = true;
      lazy_.push_back({i, l.first, l.last});
    }
    piece_frees_[l.last].push_back(l);
  }
  for (size_t i = 0; i < g.initial.size(); ++i)
    if (g.initial[i].rank == me_ && !later[i]) hold_initial(i);
  find_banded_pairs();
  find_dependencies();
  frees_ = std::move(plan::last_reads(g)[static_cast<size_t>(me_)]);
  // A stencil computed inside its map block (run_banded) reads its inputs at the map block, not
  // at its own step: those stay until the plan ends.
  for (const auto& [tensor, block] : deferred_)
    for (const NodeRef& in : node(tensor).inputs) kept_.insert(in->id);
}

RankProgram::~RankProgram() {
  if (outputs_kept_ || !shards_) return;
  for (uint64_t key : handed_keys_) shards_->drop(key);
}

void RankProgram::hold_lazy(size_t step) {
  for (Lazy& l : lazy_)
    if (!l.held && l.first <= step && step <= l.last) {
      hold_initial(l.initial);
      l.held = true;
    }
}

void RankProgram::hold_initial(size_t i) {
  const plan::ShardedGraph& g = g_;
  {
    const plan::Shard& h = g.initial[i];
    if (!keys_.initial.empty() && keys_.initial[i] != 0) {
      std::optional<ShardStore::Found> v = shards_->find_piece(me_, keys_.initial[i], h.box);
      if (!v)
        throw InternalError(cat_str("rank ", me_, " is to hold ", poly::to_string(h.box),
                                    " of stored tensor #", keys_.initial[i],
                                    " initially, but its shard store lacks it"));
      if (!v->dev.mem) hold(h.tensor, h.box, v->host);
      else if (dev_) store_.hold(h.tensor, h.box, v->dev);  // in device memory, where device blocks read it
      else hold(h.tensor, h.box, *shards_->find(me_, keys_.initial[i], h.box));  // a downloaded copy
      return;
    }
    const Node& n = node(h.tensor);
    if (!n.value)
      throw InternalError(cat_str("rank ", me_, " is to hold ", poly::to_string(h.box), " of %", h.tensor,
                                  " (", op_def(n.op).name, ") initially, but that node has no value"));
    hold(h.tensor, h.box, window(n.value->view(), Box::of_shape(n.shape), h.box));
  }
}

// A message is tagged by its order among those between the same two ranks: both ends count
// alike whether they hold the whole plan or only their own part of it (plan::lower_rank), as
// a part keeps its rank's transfers and combines in the plan's order.
void RankProgram::number_messages() {
  std::map<std::pair<int, int>, uint64_t> next;
  transfer_tag_.assign(g_.transfers.size(), 0);
  for (size_t t = 0; t < g_.transfers.size(); ++t) {
    const plan::Transfer& x = g_.transfers[t];
    if (x.from == me_ || x.to == me_) transfer_tag_[t] = next[{x.from, x.to}]++;
  }
  // A point-to-point combine goes through its first destination: each other participant sends
  // it its partials, and it sends the merged value on to the other destinations.
  next.clear();
  for (size_t c = 0; c < g_.combines.size(); ++c) {
    const plan::Combine& m = g_.combines[c];
    if (m.dest.empty()) continue;  // combine() reports it
    const int root = m.dest[0];
    std::set<int> merged_sent;
    for (size_t p : m.partials) {
      if (p >= g_.blocks.size()) continue;
      const int from = g_.blocks[p].rank;
      if (from == root || (from != me_ && root != me_)) continue;
      if (sends_merged(c, from) && !merged_sent.insert(from).second) continue;
      partial_tag_[{c, p, root}] = next[{from, root}]++;
    }
    for (size_t i = 1; i < m.dest.size(); ++i)
      if (m.dest[i] != root && (root == me_ || m.dest[i] == me_))
        result_tag_[{c, m.dest[i]}] = next[{root, m.dest[i]}]++;
  }
}

bool RankProgram::sends_merged(size_t c, int rank) {
  const plan::Combine& m = g_.combines[c];
  bool any = false;
  for (size_t p : m.partials) {
    if (p >= g_.blocks.size() || g_.blocks[p].rank != rank) continue;
    if (!sig(m.node).output_slice(g_.blocks[p].box).contains(m.out)) return false;
    any = true;
  }
  return any;
}

std::string RankProgram::describe(uint64_t tensor) const {
  const auto n = nodes_.find(tensor);
  return cat_str("%", tensor, n == nodes_.end() ? "" : cat_str(" (", op_def(n->second->op).name, ")"));
}

const Node& RankProgram::node(uint64_t id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) throw InternalError(cat_str("the plan names %", id, ", which it does not list"));
  return *it->second;
}

const poly::Signature& RankProgram::sig(uint64_t id) {
  auto it = sigs_.find(id);
  if (it == sigs_.end()) it = sigs_.emplace(id, poly::signature_of(node(id))).first;
  return it->second;
}

// After step i: the pieces no later step of this rank reads (plan::last_reads, the cost model's
// count) are dropped, and a point-to-point combine's partials once it is done. A collective's
// partials stay until the plan ends: MPI may read them until the collective completes. With
// device peers nothing is freed early: a send is posted when its turn in the transfer order
// comes, possibly after its step.
void RankProgram::release_after(size_t i) {
  if (peers_) return;
  for (const plan::PieceLife& l : piece_frees_[i]) {
    if (kept_.count(l.tensor)) continue;
    if (l.initial < 0 && keys_.root_key(l.tensor, g_) == 0 &&
        std::count(g_.roots.begin(), g_.roots.end(), l.tensor))
      continue;  // gathered to rank 0 at the end
    if (l.initial < 0 && !l.result && std::count(g_.roots.begin(), g_.roots.end(), l.tensor))
      continue;      // part of a result shard, assembled at the end
    if (l.result) {  // a kept root's result shard: to the shard store now, where it may be spilled
      const uint64_t key = keys_.root_key(l.tensor, g_);
      size_t o = 0;
      while (o < g_.outputs.size() &&
             !(g_.outputs[o].rank == me_ && g_.outputs[o].tensor == l.tensor && g_.outputs[o].box == l.box))
        ++o;
      if (o == g_.outputs.size() || std::count(handed_.begin(), handed_.end(), o)) continue;
      if (dev_ && store_.on_device(l.tensor, l.box))
        shards_->put(me_, key, l.box, store_.device(l.tensor, l.box), *dev_);
      else shards_->put(me_, key, l.box, gather(l.tensor, l.box));
      handed_.push_back(o);
      if (!std::count(handed_keys_.begin(), handed_keys_.end(), key)) handed_keys_.push_back(key);
    }
    store_.drop(l.tensor, l.box);
  }
  for (uint64_t t : frees_[i]) {
    if (kept_.count(t)) continue;
    if (t >> 63) {  // plan::partials_key(node)
      const uint64_t n = t & ~(uint64_t(1) << 63);
      bool collective = false;
      for (size_t c = 0; c < g_.combines.size(); ++c)
        collective = collective || (g_.combines[c].node == n && coll_.combines[c].collective);
      if (collective) continue;
      for (auto it = partials_.begin(); it != partials_.end();)
        it = g_.blocks[it->first].node == n ? partials_.erase(it) : std::next(it);
      continue;
    }
    store_.drop(t);
  }
}

bool RankProgram::step(const Step& s) {
  if (peers_ && (!peer_exchange_.empty() || !peer_exchanging_.empty()) && !settle_exchanges(s)) return false;
  const double t0 = trace::now_us();
  bool ok = true;
  switch (s.kind) {
    case Step::Kind::Run: run(s.index); break;
    case Step::Kind::Send: send(s.index); break;
    case Step::Kind::Recv: ok = recv(s.index); break;
    case Step::Kind::Combine: ok = combine(s.index); break;
    case Step::Kind::Exchange: ok = exchange(s.index); break;
    default: internal_fail(__FILE__, __LINE__, "unknown step kind");
  }
  if (!ok) return false;  // waiting is not moving: the time goes to whoever we wait for
  const double dur = trace::now_us() - t0;
  if (s.kind != Step::Kind::Run) move_us_ += dur;
  if (trace::enabled()) trace_step(s, t0, dur);
  if (progress_) {
    if (s.kind == Step::Kind::Run) progress_->advance(block_weight_);
    else if (s.kind == Step::Kind::Send)
      progress_->advance(0,
                         box_payload_bytes(node(g_.transfers[s.index].tensor), g_.transfers[s.index].slice));
  }
  return true;
}

// A block runs again when it fails transiently; a failed attempt counts no block.
void RankProgram::run(size_t b) {
  internal_check(b < g_.blocks.size() && g_.blocks[b].rank == me_);
  const int64_t blocks = blocks_run_, device_blocks = device_blocks_;
  run_retried(node(g_.blocks[b].node), [&] {
    blocks_run_ = blocks, device_blocks_ = device_blocks;
    run_once(b);
  });
}

void RankProgram::run_once(size_t b) {
  if (banded_into_.count(b)) {  // computed inside its map block, band by band
    ++blocks_run_;
    return;
  }
  t_.push_sends(0.002);  // what this rank just sent should leave before the block runs
  const plan::Block& k = g_.blocks[b];
  const Node& n = node(k.node);
  const poly::Signature& s = sig(k.node);
  for (const NodeRef& in : n.inputs)
    if (deferred_.count(in->id)) {
      run_banded(b);
      ++blocks_run_;
      return;
    }
  if (dev_ && backend_takes(*dev_, n)) {
    run_on_device(b);
    return;
  }
  std::vector<View> ins;
  ins.reserve(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    ins.push_back(gather(n.inputs[i]->id, s.input_slice(i, k.box)));
  ++blocks_run_;
  if (is_view_op(n)) {  // moves no data: the output is a view of the slice gathered for it
    hold(k.node, s.output_slice(k.box),
         cpu_backend().view(view_block(cpu_backend(), n, s, k.box, HostBackend::wrap(ins[0]))));
    return;
  }
  std::shared_ptr<Value> out = run_block(n, s, k.box, ins);
  // A partial is no value yet: consumers read the combined result.
  if (split_.count(k.node)) partials_[b] = std::move(out);
  else hold(k.node, s.output_slice(k.box), out->view());
}

// The block's inputs come to the device (each part of a host piece is uploaded once) and its
// output stays there; a partial goes to the host at once, where combines merge partials,
// unless the device peers merge it.
void RankProgram::run_on_device(size_t b) {
  const plan::Block& k = g_.blocks[b];
  const Node& n = node(k.node);
  const poly::Signature& s = sig(k.node);
  std::vector<DeviceView> ins;
  ins.reserve(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    ins.push_back(store_.device(n.inputs[i]->id, s.input_slice(i, k.box)));
  DeviceView out = run_block(*dev_, n, s, k.box, ins);
  ++blocks_run_;
  ++device_blocks_;
  const Box out_box = s.output_slice(k.box);
  if (!split_.count(k.node)) {
    store_.hold(k.node, out_box, std::move(out));
    return;
  }
  // Merged between the devices by the peers (rank_peer_combine.cpp): it stays here.
  if (peer_combined_nodes_.count(k.node)) device_partials_[b] = out;
  if (peer_combined_nodes_.count(k.node) && !host_combined_nodes_.count(k.node)) return;
  auto partial = Value::alloc(out.dtype(), out.shape());
  dev_->download(out, partial->v);
  bytes_from_device_ += partial->v.numel() * static_cast<int64_t>(dtype_size(partial->v.dtype));
  partials_[b] = std::move(partial);
}

void RankProgram::send(size_t t) {
  internal_check(t < g_.transfers.size() && g_.transfers[t].from == me_);
  const plan::Transfer& x = g_.transfers[t];
  if (peers_) {
    send_reached_.insert(t);
    return post_peer_ops();
  }
  run_retried([&x] { return cat_str("a transfer of %", x.tensor, " to rank ", x.to); },
              [&] {
                t_.send(x.to, comm::tag(comm::TagKind::Transfer, transfer_tag_[t]),
                        gather(x.tensor, x.slice));
              });
  transfer_bytes_ += box_payload_bytes(node(x.tensor), x.slice);
}

bool RankProgram::recv(size_t t) {
  internal_check(t < g_.transfers.size() && g_.transfers[t].to == me_);
  if (peers_) return recv_from_peer(t);
  const plan::Transfer& x = g_.transfers[t];
  std::shared_ptr<Value> v = t_.try_recv(x.from, comm::tag(comm::TagKind::Transfer, transfer_tag_[t]));
  if (!v) return false;
  internal_check(v->v.shape == x.slice.extents());
  hold(x.tensor, x.slice, v->view());
  return true;
}

bool RankProgram::reap_trailing() {
  const size_t before = trailing_.size() + peer_sends_.size();
  std::erase_if(trailing_, [](const std::unique_ptr<comm::Collective>& h) { return h->test(); });
  std::erase_if(peer_sends_, [](const PeerOp& p) { return p.handle->test(); });
  return trailing_.size() + peer_sends_.size() != before;
}

void RankProgram::send_outputs() {
  internal_check(done());
  const double t0 = trace::now_us();
  int64_t bytes = 0;
  try {
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const plan::Shard& o = g_.outputs[i];
      if (o.rank != me_ || me_ == 0 || keys_.root_key(o.tensor, g_)) continue;
      t_.send(0, comm::tag(comm::TagKind::Output, i), gather(o.tensor, o.box));
      bytes += box_payload_bytes(node(o.tensor), o.box);
      gathered_bytes_ += box_payload_bytes(node(o.tensor), o.box);
    }
  } catch (const std::exception&) {  // no Lua runs here; rethrown, tagged with the rank
    rethrow_on(me_);
  }
  const double dur = trace::now_us() - t0;
  move_us_ += dur;
  if (bytes > 0 && trace::enabled())
    trace::record({"output", "send outputs to 0", me_, trace::kComm, t0, dur, cat_str("\"bytes\":", bytes)});
}

bool RankProgram::gather_outputs(std::map<uint64_t, std::shared_ptr<Value>>& roots) {
  internal_check(me_ == 0 && done());
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    const plan::Shard& o = g_.outputs[i];
    if (o.rank == 0 || outputs_in_.count(i) || keys_.root_key(o.tensor, g_)) continue;
    auto v = t_.try_recv(o.rank, comm::tag(comm::TagKind::Output, i));
    if (!v) return false;
    outputs_in_[i] = std::move(v);
  }
  const double t0 = trace::now_us();
  for (uint64_t r : g_.roots) {
    if (keys_.root_key(r, g_)) continue;  // kept where computed
    const Node& n = node(r);
    auto full = Value::alloc(n.dtype, n.shape);
    const Box all = Box::of_shape(n.shape);
    std::vector<Box> got;
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      const plan::Shard& o = g_.outputs[i];
      if (o.tensor != r) continue;
      const View piece = o.rank == 0 ? gather(r, o.box) : outputs_in_.at(i)->view();
      internal_check(piece.dtype == n.dtype);
      cpu::copy_view(piece, window(full->v, all, o.box));
      got.push_back(o.box);
    }
    if (!poly::covered_by(all, got))
      throw InternalError(cat_str("the result shards of %", r, " do not cover it: ",
                                  poly::to_string(poly::uncovered(all, got)[0]), " lies nowhere"));
    roots[r] = std::move(full);
  }
  const double dur = trace::now_us() - t0;
  move_us_ += dur;
  if (trace::enabled())
    trace::record(
        {"output", "gather outputs", 0, trace::kComm, t0, dur, cat_str("\"roots\":", g_.roots.size())});
  return true;
}

void RankProgram::keep_outputs() {
  internal_check(done());
  outputs_kept_ = true;
  for (size_t i = 0; i < g_.outputs.size(); ++i) {
    const plan::Shard& o = g_.outputs[i];
    if (o.rank != me_ || std::count(handed_.begin(), handed_.end(), i)) continue;
    const uint64_t key = keys_.root_key(o.tensor, g_);
    if (!key) continue;
    // Computed on the device: kept there, for the next plan's device blocks.
    if (dev_ && store_.on_device(o.tensor, o.box))
      shards_->put(me_, key, o.box, store_.device(o.tensor, o.box), *dev_);
    else shards_->put(me_, key, o.box, gather(o.tensor, o.box));
  }
}

namespace {

// run_plan over rank r's graph part(r): the whole plan, or each rank's own part.
RunReport run_ranks(const std::function<const plan::ShardedGraph&(int)>& part, const StoreKeys& keys,
                    const std::vector<DeviceBackend*>& devices, ShardStore* store) {
  const plan::ShardedGraph& g = part(0);
  internal_check(devices.size() <= 1 || static_cast<int>(devices.size()) == g.num_ranks);
  comm::LoopbackHub hub(g.num_ranks);
  // With devices, slices go from device to device: copies on the device the virtual ranks share,
  // or between the simulated devices of a test (host memory each, so the CPU copies).
  HostBackend between_simulated;
  std::optional<comm::LocalPeersHub> peers;
  if (!devices.empty()) peers.emplace(g.num_ranks, devices.size() == 1 ? *devices[0] : between_simulated);
  std::vector<std::unique_ptr<RankProgram>> ranks;
  int64_t blocks = 0;
  for (int r = 0; r < g.num_ranks; ++r)
    for (const plan::Block& b : part(r).blocks) blocks += b.rank == r;
  Progress bar(blocks);
  for (int r = 0; r < g.num_ranks; ++r) {
    DeviceBackend* dev = devices.empty()       ? nullptr
                         : devices.size() == 1 ? devices[0]
                                               : devices[static_cast<size_t>(r)];
    internal_check(part(r).num_ranks == g.num_ranks && (part(r).part_of < 0 || part(r).part_of == r));
    ranks.push_back(std::make_unique<RankProgram>(part(r), hub.endpoint(r), keys, dev, store));
    if (peers) ranks.back()->use_device_peers(&peers->endpoint(r));
    ranks.back()->report_progress(&bar, 1);
  }
  // Round-robin: each rank runs until it waits; stop when all are done or none can move.
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& p : ranks) progress = p->advance() || progress;
  }
  std::string stuck;
  for (int r = 0; r < g.num_ranks; ++r)
    if (!ranks[r]->done())
      stuck += cat_str(stuck.empty() ? "" : "; ", "rank ", r, " waits at ", ranks[r]->waiting_on());
  if (!stuck.empty()) throw InternalError(cat_str("the plan deadlocks: ", stuck));
  for (auto& p : ranks) p->send_outputs();
  std::map<uint64_t, std::shared_ptr<Value>> values;
  internal_check(ranks[0]->gather_outputs(values));
  if (hub.undelivered() != 0)
    throw InternalError(cat_str("the plan sent ", hub.undelivered(), " messages that no rank received"));
  if (peers && peers->pending() != 0)
    throw InternalError(cat_str("the plan left ", peers->pending(), " device transfers unmatched"));
  // Publish only now: a failure above leaves every root as it was.
  RunReport report{0, hub.messages_sent(), hub.bytes_sent()};
  for (auto& p : ranks) report.messages += p->peer_messages(), report.bytes += p->peer_bytes();
  for (auto& p : ranks) {
    report.blocks += p->blocks_run(), report.move_s += p->move_seconds();
    report.transfer_bytes += p->transfer_bytes();
    report.combine_bytes += p->combine_bytes();
    report.gathered_bytes += p->gathered_bytes();
    report.device_blocks += p->device_blocks_run();
    report.bytes_to_device += p->bytes_to_device();
    report.bytes_from_device += p->bytes_from_device();
  }
  for (auto& p : ranks) p->keep_outputs();
  for (auto& [id, v] : values) {
    const Node* n = g.find(id);
    if (n && !n->value) set_value(*n, std::move(v));
  }
  return report;
}

}  // namespace

RunReport run_plan(const plan::ShardedGraph& g, const StoreKeys& keys,
                   const std::vector<DeviceBackend*>& devices, ShardStore* store) {
  return run_ranks([&](int) -> const plan::ShardedGraph& { return g; }, keys, devices, store);
}

RunReport run_plan_parts(const std::vector<plan::ShardedGraph>& parts, const StoreKeys& keys,
                         const std::vector<DeviceBackend*>& devices, ShardStore* store) {
  internal_check(!parts.empty() && static_cast<int>(parts.size()) == parts[0].num_ranks);
  return run_ranks([&](int r) -> const plan::ShardedGraph& { return parts[static_cast<size_t>(r)]; }, keys,
                   devices, store);
}

}  // namespace tapestry
