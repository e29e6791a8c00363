// RankProgram's combines over device peers that merge (rank_program.hpp, engine/device/peers.hpp):
// a combine the peers can run as a collective (comm::plan_collectives over their capabilities:
// the same choice on every rank) runs as their reduce, all-reduce or reduce-scatter between the
// members' devices (NCCL on GPUs, LocalPeersHub between virtual ranks, MPI for the simulated
// device under mpirun). Each member merges its own partials over the combine's `out` on its
// device, and posts the collective where the plan places it in the one posting order (every
// member alike, plan::Combine::after), so it can never overtake a transfer or an exchange that
// another member posts first. The result stays on the device; nothing crosses the host.
#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/ir/error.hpp"
#include "engine/poly/view_window.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using poly::Box;

namespace {

// The output `out` of node n as a shape: its extents, then n's dims beyond the box.
Shape shape_of(const Node& n, const Box& out) {
  Shape s = out.extents();
  for (size_t d = static_cast<size_t>(out.rank()); d < n.shape.size(); ++d) s.push_back(n.shape[d]);
  return s;
}

// `shape` packed contiguously at element `at` of `buf`.
DeviceView packed_at(const DeviceView& buf, int64_t at, const Shape& shape) {
  View v = buf.layout;
  v.shape = shape;
  v.strides = contiguous_strides(shape);
  v.offset = buf.layout.offset + at;
  return buf.with(std::move(v));
}

// Every member derives the same label from the plan: the simulations check it.
uint64_t label_of(const plan::Combine& m) {
  uint64_t h = m.node * 4 + 3;  // exchanges' labels are tensor * 4 + their kind (0..2)
  for (int d = 0; d < m.out.rank(); ++d) h = (h * 1000003) ^ static_cast<uint64_t>(m.out.lo[d]);
  return h;
}

}  // namespace

// Which combines run on the peers, and their entries in the posting order.
void RankProgram::place_peer_combines(std::vector<std::tuple<size_t, size_t, size_t, size_t>>& order) {
  peer_combine_.assign(g_.combines.size(), false);
  comm::Capabilities can;
  comm::DevicePeers* peers = peers_;
  can.reduce = [peers](Monoid op, DType t) { return peers->can_reduce(op, t); };
  can.reduce_scatter = true;
  peer_coll_ = comm::plan_collectives(g_, can);
  for (size_t c = 0; c < g_.combines.size(); ++c) {
    const comm::CombineRoute& route = peer_coll_.combines[c];
    bool placed = route.collective;
    for (size_t m : route.scatter) placed = placed && g_.combines[m].after != plan::Combine::kUnplaced;
    peer_combine_[c] = placed && g_.combines[c].after != plan::Combine::kUnplaced;
  }
  for (size_t c = 0; c < g_.combines.size(); ++c) {
    (peer_combine_[c] ? peer_combined_nodes_ : host_combined_nodes_).insert(g_.combines[c].node);
    if (!peer_combine_[c] || peer_combine_key(c) != c) continue;
    const comm::Group& members = peer_coll_.combines[c].spec.group;
    if (!std::binary_search(members.begin(), members.end(), me_)) continue;  // the whole plan: others' too
    const plan::Combine& m = g_.combines[c];
    order.emplace_back(2 * m.after, m.exchanges_before, 0, kCombineEntry | c);
  }
}

// A reduce-scatter is one collective: keyed and placed by the first of its combines made.
size_t RankProgram::peer_combine_key(size_t c) const {
  const std::vector<size_t>& s = peer_coll_.combines[c].scatter;
  return s.empty() ? c : *std::min_element(s.begin(), s.end());
}

// This rank's partials of combine c over `out`, merged on the device in plan order (the
// partial itself when it is the only one and contiguous); the merge's identity where it holds
// none (a destination that computed no partial). A partial computed on the CPU is uploaded.
DeviceView RankProgram::device_contribution(size_t c) {
  const plan::Combine& m = g_.combines[c];
  const Node& n = node(m.node);
  const Monoid op = peer_coll_.combines[c].spec.op;
  std::vector<DeviceView> mine;
  for (size_t p : m.partials) {
    if (g_.blocks[p].rank != me_) continue;
    const Box slice = sig(m.node).output_slice(g_.blocks[p].box);
    DeviceView whole;
    if (auto d = device_partials_.find(p); d != device_partials_.end()) {
      whole = d->second;
    } else {
      auto h = partials_.find(p);
      if (h == partials_.end())
        throw InternalError(
            cat_str("combine ", c, " merges the partial of block ", p, ", which has not run"));
      whole = device_alloc(*dev_, h->second->v.dtype, h->second->v.shape);
      dev_->upload(h->second->view(), whole);
    }
    mine.push_back(whole.with(window(whole.layout, slice, intersect(slice, m.out))));
  }
  if (mine.size() == 1 && mine[0].is_contiguous()) return mine[0];
  DeviceView acc = device_alloc(*dev_, n.dtype, shape_of(n, m.out));
  if (mine.empty()) {
    auto identity = Value::alloc(n.dtype, acc.shape());
    cpu::fill_identity(op, identity->v);
    dev_->upload(identity->v, acc);
    return acc;
  }
  dev_->copy(mine[0], acc);
  for (size_t i = 1; i < mine.size(); ++i) {
    DeviceView next = device_alloc(*dev_, n.dtype, acc.shape());
    comm::merge_on_device(*dev_, op, acc, mine[i], next);
    acc = std::move(next);
  }
  return acc;
}

// Its step: posts the collective at its turn (once this rank reached it); a member that
// receives waits for the result, one that only contributes goes on at once.
bool RankProgram::combine_on_peers(size_t c) {
  const size_t key = peer_combine_key(c);
  const plan::Combine& m = g_.combines[c];
  const comm::CombineRoute& route = peer_coll_.combines[c];
  if (!peer_combined_.count(key) && !peer_combining_.count(key)) {
    combine_reached_.insert(key);
    post_peer_ops();
  }
  const bool receives = route.scatter.empty() ? route.spec.root == comm::kAllMembers || route.spec.root == me_
                                              : m.dest[0] == me_;
  if (!receives) return true;
  auto it = peer_combining_.find(key);
  if (it == peer_combining_.end() || !it->second.handle->test()) return false;
  store_.hold(m.node, m.out, packed_at(it->second.out, 0, shape_of(node(m.node), m.out)));
  peer_combined_.insert(key);
  peer_combining_.erase(it);
  return true;
}

void RankProgram::post_peer_combine(size_t key) {
  const comm::CombineRoute& route = peer_coll_.combines[key];
  const plan::Combine& m = g_.combines[key];
  const Node& n = node(m.node);
  PeerCombine pc;
  pc.spec = route.spec;
  bool receives = false;
  if (route.scatter.empty()) {
    pc.in = device_contribution(key);
    if (!pc.in.is_contiguous()) {
      DeviceView packed = device_alloc(*dev_, n.dtype, pc.in.shape());
      dev_->copy(pc.in, packed);
      pc.in = std::move(packed);
    }
    receives = route.spec.root == comm::kAllMembers || route.spec.root == me_;
    if (receives) pc.out = device_alloc(*dev_, n.dtype, pc.in.shape());
    // The peers do not say what their algorithm sent: the plan's bytes, counted once.
    if (me_ == route.spec.group.front()) combine_bytes_ += plan::combine_bytes(g_, m);
  } else {
    // Every member's piece of the merge, packed in group order: this rank's partials over it.
    int64_t total = 0;
    for (int64_t k : route.spec.counts) total += k;
    pc.in = device_alloc(*dev_, n.dtype, {total});
    int64_t at = 0;
    for (size_t piece : route.scatter) {
      const plan::Combine& pm = g_.combines[piece];
      const DeviceView part = device_contribution(piece);
      dev_->copy(part, packed_at(pc.in, at, part.shape()));
      at += part.numel();
      if (pm.dest[0] == me_) pc.out = device_alloc(*dev_, n.dtype, shape_of(n, pm.out)), receives = true;
      if (me_ == route.spec.group.front()) combine_bytes_ += plan::combine_bytes(g_, pm);
    }
    internal_check(at == total && receives);
  }
  pc.handle = peers_->reduce(pc.spec, pc.in, pc.out, label_of(m));
  // What this rank contributes, as a transport counts a collective (a reduce's root sends none).
  if (!route.scatter.empty() || route.spec.root != me_) {
    ++peer_messages_;
    peer_bytes_ += pc.in.numel() * static_cast<int64_t>(dtype_size(n.dtype));
  }
  pc.receives = receives;
  peer_combining_.emplace(key, std::move(pc));
}

// Posts what waited for an earlier operation, and forgets the collectives this rank only
// contributed to once they completed (a receiving member takes its result at its step).
bool RankProgram::reap_peer_combines() {
  if (!peers_) return false;
  const size_t before = peer_combining_.size() + combine_reached_.size();
  post_peer_ops();
  for (auto it = peer_combining_.begin(); it != peer_combining_.end();) {
    if (!it->second.receives && it->second.handle->test()) {
      peer_combined_.insert(it->first);
      it = peer_combining_.erase(it);
    } else {
      ++it;
    }
  }
  return peer_combining_.size() + combine_reached_.size() != before;
}

}  // namespace tapestry
