// RankProgram's exchanges (rank_program.hpp): a plan's broadcasts, all-gathers and all-to-alls
// (plan::Exchange), run as one of the transport's collectives (MPI_Ibcast / MPI_Iallgatherv /
// MPI_Ialltoallv over MPI, a meeting of the virtual ranks over loopback) or, where the route
// says point to point, as the exchange's own transfers.
#include <algorithm>
#include <cstring>

#include "engine/ir/error.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using poly::Box;

// Shared with rank_peer_exchange.cpp (declared in rank_program.hpp).
comm::ExchangeKind exchange_kind(plan::Exchange::Kind k) {
  switch (k) {
    case plan::Exchange::Kind::Broadcast: return comm::ExchangeKind::Broadcast;
    case plan::Exchange::Kind::AllGather: return comm::ExchangeKind::AllGather;
    case plan::Exchange::Kind::AllToAll: return comm::ExchangeKind::AllToAll;
  }
  return comm::ExchangeKind::Broadcast;
}

int64_t slice_bytes(const Node& n, const Box& b) {
  return (b.empty() ? 0 : numel(b.extents())) * static_cast<int64_t>(dtype_size(n.dtype));
}

namespace {

bool box_less(const Box& a, const Box& b) {
  const auto less = [](const auto& x, const auto& y) {
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  };
  return less(a.lo, b.lo) || (!less(b.lo, a.lo) && less(a.hi, b.hi));
}

// Appends the elements of `v` (any strides) to `out`, row-major.
void pack(const View& v, std::vector<char>& out) {
  const size_t bytes = static_cast<size_t>(v.numel()) * dtype_size(v.dtype);
  const size_t at = out.size();
  out.resize(at + bytes);
  if (bytes == 0) return;
  if (v.is_contiguous()) {
    std::memcpy(out.data() + at, v.byte_ptr(), bytes);
    return;
  }
  auto dense = Value::alloc(v.dtype, v.shape);
  cpu::copy_view(v, dense->v);
  std::memcpy(out.data() + at, dense->v.byte_ptr(), bytes);
}

// The slice `b` of n from `bytes` at `at` (advanced past it), as a value of its own.
std::shared_ptr<Value> unpack(const Node& n, const Box& b, const std::vector<char>& bytes, int64_t& at) {
  auto v = Value::alloc(n.dtype, b.extents());
  const int64_t size = slice_bytes(n, b);
  internal_check(at + size <= static_cast<int64_t>(bytes.size()));
  if (size > 0) std::memcpy(v->v.byte_ptr(), bytes.data() + at, static_cast<size_t>(size));
  at += size;
  return v;
}

}  // namespace

bool RankProgram::exchange(size_t e) {
  internal_check(e < g_.exchanges.size());
  // With device peers every transfer goes device to device in the plan's posting order
  // (peers.hpp): an exchange as the peers' collective where they have them, else its
  // transfers, point to point.
  if (peers_ && on_peers(e)) return exchange_on_peers(e);
  if (!peers_ && e < coll_.exchanges.size() && coll_.exchanges[e].collective) return exchange_collective(e);
  return exchange_p2p(e);
}

// The exchange's transfers of this rank, each as its own message: a receive as it arrives, a
// send once no receive of this exchange that reaches its slice is still due (a tree's relay
// forwards what it received; every other sender holds its data already).
bool RankProgram::exchange_p2p(size_t e) {
  const plan::Exchange& x = g_.exchanges[e];
  if (peers_) {
    for (size_t t : x.transfers)
      if (g_.transfers[t].from == me_ || g_.transfers[t].to == me_) peer_exchange_.push_back(t);
    settle_exchanges(plan::Step{plan::Step::Kind::Exchange, e});
    return true;
  }
  auto [it, fresh] = exchange_left_.try_emplace(e);
  if (fresh)
    for (size_t t : x.transfers)
      if (g_.transfers[t].from == me_ || g_.transfers[t].to == me_) it->second.push_back(t);
  std::vector<size_t>& left = it->second;
  std::vector<const Box*> due;  // receives not arrived yet
  for (auto t = left.begin(); t != left.end();) {
    const plan::Transfer& tr = g_.transfers[*t];
    if (tr.to == me_) {
      if (recv(*t)) {
        t = left.erase(t);
      } else {
        due.push_back(&tr.slice);
        ++t;
      }
      continue;
    }
    if (std::any_of(due.begin(), due.end(), [&](const Box* b) { return overlaps(*b, tr.slice); })) {
      ++t;
      continue;
    }
    send(*t);
    t = left.erase(t);
  }
  if (!left.empty()) return false;
  exchange_left_.erase(it);
  return true;
}

// Completes what has arrived of the exchanges' receives and sends what a relay now holds, in
// transfer order; whether `next` may run: it reads no tensor with an exchange receive pending.
bool RankProgram::settle_exchanges(const plan::Step& next) {
  settle_peer_exchanges();
  std::vector<const plan::Transfer*> due;  // receives (and relayed sends) not done yet
  for (auto t = peer_exchange_.begin(); t != peer_exchange_.end();) {
    const plan::Transfer& tr = g_.transfers[*t];
    if (tr.to == me_) {
      if (recv_from_peer(*t)) {
        t = peer_exchange_.erase(t);
      } else {
        due.push_back(&tr);
        ++t;
      }
      continue;
    }
    if (std::any_of(due.begin(), due.end(), [&](const plan::Transfer* d) {
          return d->to == me_ && d->tensor == tr.tensor && overlaps(d->slice, tr.slice);
        })) {
      due.push_back(&tr);
      ++t;
      continue;
    }
    send(*t);
    t = peer_exchange_.erase(t);
  }
  const auto waits = [&](uint64_t tensor, const Box& b) {
    for (const auto& [e, x] : peer_exchanging_)
      if (g_.exchanges[e].tensor == tensor)
        for (const PeerExchange::Piece& p : x.unpacks)
          if (p.keep && overlaps(p.box, b)) return true;
    return std::any_of(due.begin(), due.end(), [&](const plan::Transfer* d) {
      return d->tensor == tensor && d->to == me_ && overlaps(d->slice, b);
    });
  };
  switch (next.kind) {
    case plan::Step::Kind::Run: {
      const plan::Block& k = g_.blocks[next.index];
      const Node& n = node(k.node);
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (waits(n.inputs[i]->id, sig(k.node).input_slice(i, k.box))) return false;
      return true;
    }
    case plan::Step::Kind::Send:
      return !waits(g_.transfers[next.index].tensor, g_.transfers[next.index].slice);
    case plan::Step::Kind::Exchange: {
      const plan::Exchange& x = g_.exchanges[next.index];
      for (size_t t : x.transfers)
        if (g_.transfers[t].from == me_ && waits(x.tensor, g_.transfers[t].slice)) return false;
      return true;
    }
    default: return true;
  }
}

// As one collective: this rank packs what it sends (a broadcast's root its slice, an
// all-gather's member its distinct parts in box order, an all-to-all's member its slices by
// destination in transfer order), and unpacks what it receives in the same orders, which
// every member derives alike from its own transfers of the exchange.
bool RankProgram::exchange_collective(size_t e) {
  const plan::Exchange& x = g_.exchanges[e];
  const Node& n = node(x.tensor);
  auto it = exchanging_.find(e);
  if (it == exchanging_.end()) {
    comm::ExchangeSpec spec;
    spec.kind = exchange_kind(x.kind);
    spec.group.assign(x.members.begin(), x.members.end());
    spec.root = x.root;
    const size_t p = spec.group.size();
    auto in = std::make_shared<std::vector<char>>();
    auto out = std::make_shared<std::vector<char>>();
    int64_t plan_bytes = 0;  // what the plan's transfers from this rank carry (tp.stats)
    for (size_t t : x.transfers)
      if (g_.transfers[t].from == me_) plan_bytes += slice_bytes(n, g_.transfers[t].slice);
    switch (x.kind) {
      case plan::Exchange::Kind::Broadcast: {
        const Box& slice = g_.transfers[x.transfers.at(0)].slice;
        spec.counts = {slice_bytes(n, slice)};
        if (me_ == x.root) pack(gather(x.tensor, slice), *in);
        else out->resize(static_cast<size_t>(spec.counts[0]));
        break;
      }
      case plan::Exchange::Kind::AllGather: {
        spec.counts.assign(p, 0);
        const std::vector<std::vector<Box>> parts = gathered_parts(e);
        for (size_t i = 0; i < p; ++i)
          for (const Box& b : parts[i]) spec.counts[i] += slice_bytes(n, b);
        for (const Box& b : parts[static_cast<size_t>(spec.member(me_))]) pack(gather(x.tensor, b), *in);
        int64_t total = 0;
        for (int64_t c : spec.counts) total += c;
        out->resize(static_cast<size_t>(total));
        break;
      }
      case plan::Exchange::Kind::AllToAll: {
        spec.counts.assign(p, 0);
        spec.recv.assign(p, 0);
        std::vector<std::vector<size_t>> to(p);
        for (size_t t : x.transfers) {
          const plan::Transfer& tr = g_.transfers[t];
          if (tr.from == me_) to[static_cast<size_t>(spec.member(tr.to))].push_back(t);
          if (tr.to == me_) spec.recv[static_cast<size_t>(spec.member(tr.from))] += slice_bytes(n, tr.slice);
        }
        for (size_t i = 0; i < p; ++i)
          for (size_t t : to[i]) {
            spec.counts[i] += slice_bytes(n, g_.transfers[t].slice);
            pack(gather(x.tensor, g_.transfers[t].slice), *in);
          }
        int64_t total = 0;
        for (int64_t c : spec.recv) total += c;
        out->resize(static_cast<size_t>(total));
        break;
      }
    }
    transfer_bytes_ += plan_bytes;
    std::unique_ptr<comm::Collective> h = t_.start_exchange(spec, std::move(in), out);
    if (spec.received(me_) == 0) {  // only contributes: goes on as after a send
      trailing_.push_back(std::move(h));
      return true;
    }
    it = exchanging_.emplace(e, Exchanging{std::move(h), std::move(spec), std::move(out)}).first;
  }
  if (!it->second.handle->test()) return false;
  const comm::ExchangeSpec& spec = it->second.spec;
  const std::vector<char>& bytes = *it->second.out;
  switch (x.kind) {
    case plan::Exchange::Kind::Broadcast: {
      const Box& slice = g_.transfers[x.transfers.at(0)].slice;
      int64_t at = 0;
      hold(x.tensor, slice, unpack(n, slice, bytes, at)->view());
      break;
    }
    case plan::Exchange::Kind::AllGather: {
      const std::vector<std::vector<Box>> parts = gathered_parts(e);
      int64_t at = 0;
      for (size_t i = 0; i < parts.size(); ++i)
        for (const Box& b : parts[i]) {
          std::shared_ptr<Value> v = unpack(n, b, bytes, at);
          if (spec.group[i] != me_) hold(x.tensor, b, v->view());
        }
      break;
    }
    case plan::Exchange::Kind::AllToAll: {
      std::vector<std::vector<size_t>> from(spec.group.size());
      for (size_t t : x.transfers)
        if (g_.transfers[t].to == me_)
          from[static_cast<size_t>(spec.member(g_.transfers[t].from))].push_back(t);
      int64_t at = 0;
      for (const std::vector<size_t>& ts : from)
        for (size_t t : ts)
          hold(x.tensor, g_.transfers[t].slice, unpack(n, g_.transfers[t].slice, bytes, at)->view());
      break;
    }
  }
  exchanging_.erase(it);
  return true;
}

// An all-gather's parts per member (group order), each member's distinct slices in box order:
// this rank's from what it sends, the others' from what it receives from them.
std::vector<std::vector<Box>> RankProgram::gathered_parts(size_t e) const {
  const plan::Exchange& x = g_.exchanges[e];
  std::vector<std::vector<Box>> parts(x.members.size());
  for (size_t t : x.transfers) {
    const plan::Transfer& tr = g_.transfers[t];
    if (tr.from != me_ && tr.to != me_) continue;
    const auto at = std::lower_bound(x.members.begin(), x.members.end(), tr.from);
    std::vector<Box>& v = parts[static_cast<size_t>(at - x.members.begin())];
    if (std::find(v.begin(), v.end(), tr.slice) == v.end()) v.push_back(tr.slice);
  }
  for (std::vector<Box>& v : parts) std::sort(v.begin(), v.end(), box_less);
  return parts;
}

}  // namespace tapestry
