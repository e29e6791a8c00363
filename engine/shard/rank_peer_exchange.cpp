// RankProgram over device peers (rank_program.hpp, engine/device/peers.hpp): the one order
// every rank posts its transfers and exchanges in, and the exchanges that run as the peers'
// collectives: a broadcast, all-gather or all-to-all as one grouped collective
// between the members' devices (NCCL on GPUs, LocalPeersHub between virtual ranks). Each
// member packs what it contributes into one device buffer and unpacks what it receives from
// another, in the layout comm::ExchangeSpec fixes, which every member derives alike from its
// own transfers of the exchange (as the MPI collectives of rank_exchange.cpp do on the host).
#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/ir/error.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry {

using poly::Box;

namespace {

// The slice of shape `extents` packed contiguously at byte `at` of `buf`.
DeviceView window_at(const DeviceView& buf, int64_t at, const Shape& extents) {
  const auto es = static_cast<int64_t>(dtype_size(buf.dtype()));
  internal_check(at % es == 0);
  View v = buf.layout;
  v.shape = extents;
  v.strides = contiguous_strides(extents);
  v.offset = buf.layout.offset + at / es;
  return buf.with(std::move(v));
}

int64_t total(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

void RankProgram::use_device_peers(comm::DevicePeers* peers) {
  internal_check(dev_ != nullptr && pc_ == 0 && peers->rank() == me_ && peers->size() == g_.num_ranks);
  peers_ = peers;
  // The exchanges that run as the peers' collectives: those the transport would run as its
  // own (the same choice on every rank), placed in the plan (every member posts them alike).
  peer_collective_.assign(g_.exchanges.size(), false);
  std::vector<char> in_collective(g_.transfers.size(), 0);
  for (size_t e = 0; e < g_.exchanges.size(); ++e) {
    const plan::Exchange& x = g_.exchanges[e];
    if (!peers->has_exchanges() || e >= coll_.exchanges.size() || !coll_.exchanges[e].collective ||
        x.after == plan::Exchange::kUnplaced)
      continue;
    peer_collective_[e] = true;
    for (size_t t : x.transfers) in_collective[t] = 1;
  }
  // Posting order: transfers by index, each exchange and combine before the transfers made
  // after it, and among those placed at one transfer, in the order they were made (a combine
  // before exchange e when e exchanges were made before it). (place, exchanges before, 0 for
  // a combine, entry).
  std::vector<std::tuple<size_t, size_t, size_t, size_t>> order;
  for (size_t e = 0; e < g_.exchanges.size(); ++e) {
    const plan::Exchange& x = g_.exchanges[e];
    if (peer_collective_[e] && std::binary_search(x.members.begin(), x.members.end(), me_))
      order.emplace_back(2 * x.after, e, 1, kExchangeEntry | e);
  }
  for (size_t t = 0; t < g_.transfers.size(); ++t)
    if ((g_.transfers[t].from == me_ || g_.transfers[t].to == me_) && !in_collective[t])
      order.emplace_back(2 * t + 1, 0, 0, t);
  place_peer_combines(order);
  std::sort(order.begin(), order.end());
  for (const auto& o : order) peer_order_.push_back(std::get<3>(o));
}

// In transfer order: every rank posts its part of transfer t after its part of every earlier
// one, so each pair of ranks posts its operations in the same order. A receive needs nothing
// but a buffer; a send waits for its step (its data is computed by then).
void RankProgram::post_peer_ops() {
  for (; peer_next_ < peer_order_.size(); ++peer_next_) {
    const size_t t = peer_order_[peer_next_];
    if (!(t & kExchangeEntry) && (t & kCombineEntry)) {
      const size_t key = t & ~kCombineEntry;
      if (!combine_reached_.erase(key)) return;  // a contributor posts once its step was reached
      post_peer_combine(key);
      continue;
    }
    if (t & kExchangeEntry) {
      const size_t e = t & ~kExchangeEntry;
      const plan::Exchange& x = g_.exchanges[e];
      // A contributor posts once its step was reached (its data is computed); a broadcast's
      // receiver needs only buffers.
      const bool receives_only = x.kind == plan::Exchange::Kind::Broadcast && x.root != me_;
      if (!receives_only && !exchange_reached_.erase(e)) return;
      post_peer_exchange(e);
      continue;
    }
    const plan::Transfer& x = g_.transfers[t];
    if (x.from == me_) {
      if (!send_reached_.erase(t)) return;
      DeviceView src = store_.device(x.tensor, x.slice);
      if (!src.is_contiguous()) {  // NCCL sends one run of memory
        DeviceView packed = device_alloc(*dev_, src.dtype(), src.shape());
        dev_->copy(src, packed);
        src = std::move(packed);
      }
      std::unique_ptr<comm::Collective> h = peers_->send(x.to, src, transfer_tag_[t]);
      ++peer_messages_;
      peer_bytes_ += src.numel() * static_cast<int64_t>(dtype_size(src.dtype()));
      transfer_bytes_ += src.numel() * static_cast<int64_t>(dtype_size(src.dtype()));
      peer_sends_.push_back({std::move(h), std::move(src)});
    } else {
      DeviceView buf = device_alloc(*dev_, node(x.tensor).dtype, x.slice.extents());
      std::unique_ptr<comm::Collective> h = peers_->recv(x.from, buf, transfer_tag_[t]);
      peer_recvs_.emplace(t, PeerOp{std::move(h), std::move(buf)});
    }
  }
}

bool RankProgram::recv_from_peer(size_t t) {
  post_peer_ops();
  auto it = peer_recvs_.find(t);
  if (it == peer_recvs_.end() || !it->second.handle->test()) return false;
  store_.hold(g_.transfers[t].tensor, g_.transfers[t].slice, std::move(it->second.buf));
  peer_recvs_.erase(it);
  return true;
}

RankProgram::PeerExchange& RankProgram::peer_exchange_layout(size_t e) {
  auto it = peer_exchanging_.find(e);
  if (it != peer_exchanging_.end()) return it->second;
  PeerExchange& l = peer_exchanging_[e];
  const plan::Exchange& x = g_.exchanges[e];
  const Node& n = node(x.tensor);
  comm::ExchangeSpec& spec = l.spec;
  spec.kind = exchange_kind(x.kind);
  spec.group.assign(x.members.begin(), x.members.end());
  spec.root = x.root;
  const size_t p = spec.group.size();
  for (size_t t : x.transfers)
    if (g_.transfers[t].from == me_) l.plan_bytes += slice_bytes(n, g_.transfers[t].slice);
  switch (x.kind) {
    case plan::Exchange::Kind::Broadcast: {
      const Box& slice = g_.transfers[x.transfers.at(0)].slice;
      spec.counts = {slice_bytes(n, slice)};
      if (me_ == x.root) l.packs.push_back(slice);
      else l.unpacks.push_back({slice, 0, true});
      break;
    }
    case plan::Exchange::Kind::AllGather: {
      const std::vector<std::vector<Box>> parts = gathered_parts(e);
      spec.counts.assign(p, 0);
      int64_t at = 0;
      for (size_t i = 0; i < p; ++i)
        for (const Box& b : parts[i]) {
          spec.counts[i] += slice_bytes(n, b);
          l.unpacks.push_back({b, at, spec.group[i] != me_});
          at += slice_bytes(n, b);
        }
      l.packs = parts[static_cast<size_t>(spec.member(me_))];
      break;
    }
    case plan::Exchange::Kind::AllToAll: {
      spec.counts.assign(p, 0);
      spec.recv.assign(p, 0);
      std::vector<std::vector<size_t>> to(p), from(p);
      for (size_t t : x.transfers) {
        const plan::Transfer& tr = g_.transfers[t];
        if (tr.from == me_) to[static_cast<size_t>(spec.member(tr.to))].push_back(t);
        if (tr.to == me_) from[static_cast<size_t>(spec.member(tr.from))].push_back(t);
      }
      int64_t at = 0;
      for (size_t i = 0; i < p; ++i) {
        for (size_t t : to[i]) {
          spec.counts[i] += slice_bytes(n, g_.transfers[t].slice);
          l.packs.push_back(g_.transfers[t].slice);
        }
        for (size_t t : from[i]) {
          spec.recv[i] += slice_bytes(n, g_.transfers[t].slice);
          l.unpacks.push_back({g_.transfers[t].slice, at, true});
          at += slice_bytes(n, g_.transfers[t].slice);
        }
      }
      break;
    }
  }
  return l;
}

// The Exchange step: lays the exchange out (so later steps know what it brings) and posts it
// when its turn in the posting order comes; it goes on at once, like a send.
bool RankProgram::exchange_on_peers(size_t e) {
  if (peer_exchanged_.count(e)) return true;  // a broadcast's receiver: done before its step
  PeerExchange& l = peer_exchange_layout(e);
  if (!l.handle) {
    exchange_reached_.insert(e);
    post_peer_ops();
  }
  settle_peer_exchanges();
  return true;
}

void RankProgram::post_peer_exchange(size_t e) {
  PeerExchange& l = peer_exchange_layout(e);
  exchange_reached_.erase(e);
  const plan::Exchange& x = g_.exchanges[e];
  const Node& n = node(x.tensor);
  const auto es = static_cast<int64_t>(dtype_size(n.dtype));
  int64_t in_bytes = 0, out_bytes = 0;
  for (const Box& b : l.packs) in_bytes += slice_bytes(n, b);
  switch (l.spec.kind) {
    case comm::ExchangeKind::Broadcast: out_bytes = l.spec.counts[0]; break;
    case comm::ExchangeKind::AllGather: out_bytes = total(l.spec.counts); break;
    case comm::ExchangeKind::AllToAll: out_bytes = total(l.spec.recv); break;
  }
  // At least one element each: a buffer is device memory even when this rank moves nothing.
  l.in = device_alloc(*dev_, n.dtype, {std::max<int64_t>(1, in_bytes / es)});
  l.out = device_alloc(*dev_, n.dtype, {std::max<int64_t>(1, out_bytes / es)});
  int64_t at = 0;
  for (const Box& b : l.packs) {
    if (!b.empty()) dev_->copy(store_.device(x.tensor, b), window_at(l.in, at, b.extents()));
    at += slice_bytes(n, b);
  }
  // Every member derives the same label from the plan: the simulations check it.
  const uint64_t label = x.tensor * 4 + static_cast<uint64_t>(x.kind);
  l.handle = peers_->exchange(l.spec, l.in, l.out, label);
  if (l.plan_bytes > 0) ++peer_messages_;
  peer_bytes_ += l.plan_bytes;
  transfer_bytes_ += l.plan_bytes;
}

bool RankProgram::settle_peer_exchanges() {
  post_peer_ops();  // what waited for an earlier operation to be posted
  bool any = false;
  for (auto it = peer_exchanging_.begin(); it != peer_exchanging_.end();) {
    PeerExchange& l = it->second;
    if (!l.handle || !l.handle->test()) {
      ++it;
      continue;
    }
    const uint64_t tensor = g_.exchanges[it->first].tensor;
    for (const PeerExchange::Piece& p : l.unpacks)
      if (p.keep && !p.box.empty()) store_.hold(tensor, p.box, window_at(l.out, p.at, p.box.extents()));
    peer_exchanged_.insert(it->first);
    it = peer_exchanging_.erase(it);
    any = true;
  }
  return any;
}

}  // namespace tapestry
