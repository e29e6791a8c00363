#include "engine/shard/rank_store.hpp"

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

using poly::Box;

namespace {

DeviceView window(const DeviceView& d, const Box& origin, const Box& want) {
  return d.with(window(d.layout, origin, want));
}

int64_t bytes_of(const View& v) { return v.numel() * static_cast<int64_t>(dtype_size(v.dtype)); }

}  // namespace

void RankStore::hold(uint64_t tensor, Box box, View v) {
  internal_check(v.buf != nullptr);
  store_[tensor].push_back({std::move(box), std::move(v), {}});
}

void RankStore::hold(uint64_t tensor, Box box, DeviceView v) {
  internal_check(v.mem != nullptr && dev_ != nullptr);
  store_[tensor].push_back({std::move(box), {}, std::move(v)});
}

void RankStore::drop(uint64_t tensor, const Box& box) {
  auto it = store_.find(tensor);
  if (it == store_.end()) return;
  std::erase_if(it->second, [&](const Piece& p) { return p.box == box; });
  if (it->second.empty()) store_.erase(it);
}

std::vector<RankStore::Piece>& RankStore::pieces(uint64_t tensor) {
  static std::vector<Piece> none;  // stays empty: only read
  auto it = store_.find(tensor);
  return it == store_.end() ? none : it->second;
}

void RankStore::check_covered(uint64_t tensor, const Box& need, const std::vector<Piece>& ps) const {
  std::vector<Box> boxes;
  for (const Piece& p : ps) boxes.push_back(p.box);
  const std::vector<Box> missing = poly::uncovered(need, boxes);
  if (!missing.empty())
    throw InternalError(cat_str("rank ", rank_, " needs ", poly::to_string(need), " of ", describe_(tensor),
                                " but lacks ", poly::to_string(missing[0]),
                                " (neither held, computed there, nor received)"));
}

View RankStore::download(const DeviceView& d) {
  auto v = Value::alloc(d.dtype(), d.shape());
  dev_->download(d, v->v);
  downloaded_ += bytes_of(v->v);
  return v->v;
}

const DeviceView& RankStore::on_device(Piece& p) {
  if (!p.dev.mem) {
    internal_check(p.host.buf != nullptr);
    p.dev = device_alloc(*dev_, p.host.dtype, p.host.shape);
    dev_->upload(p.host, p.dev);
    uploaded_ += bytes_of(p.host);
  }
  return p.dev;
}

bool RankStore::on_device(uint64_t tensor, const Box& need) const {
  auto it = store_.find(tensor);
  if (it == store_.end()) return false;
  for (const Piece& p : it->second)
    if (p.dev.mem && p.box.contains(need)) return true;
  return false;
}

View RankStore::host(uint64_t tensor, const Box& need) {
  if (need.empty()) return View{};  // a clipped projection reads nothing
  std::vector<Piece>& ps = pieces(tensor);
  for (const Piece& p : ps)
    if (p.host.buf && p.box.contains(need)) return window(p.host, p.box, need);
  for (Piece& p : ps) {
    if (!p.dev.mem || !p.box.contains(need)) continue;
    if (p.box != need) return download(window(p.dev, p.box, need));  // only the slice asked for
    p.host = download(p.dev);  // the whole piece: kept, for its other host readers
    return p.host;
  }
  check_covered(tensor, need, ps);
  // Several pieces: copy each point once into a buffer of exactly the needed box.
  const DType t = ps[0].host.buf ? ps[0].host.dtype : ps[0].dev.dtype();
  auto out = Value::alloc(t, need.extents());
  std::vector<Box> copied;
  for (const Piece& p : ps) {
    const Box part = intersect(p.box, need);
    if (part.empty()) continue;
    for (const Box& u : poly::uncovered(part, copied)) {
      const View dst = window(out->v, need, u);
      if (p.host.buf) cpu::copy_view(window(p.host, p.box, u), dst);
      else cpu::copy_view(download(window(p.dev, p.box, u)), dst);
    }
    copied.push_back(part);
  }
  return out->v;
}

DeviceView RankStore::device(uint64_t tensor, const Box& need) {
  internal_check(dev_ != nullptr);
  if (need.empty()) return DeviceView{};
  std::vector<Piece>& ps = pieces(tensor);
  for (const Piece& p : ps)
    if (p.dev.mem && p.box.contains(need)) return window(p.dev, p.box, need);
  for (Piece& p : ps) {
    if (!p.box.contains(need)) continue;
    if (p.box == need) return on_device(p);
    // Part of a host piece: only that part goes up, kept as a piece of its own for later readers.
    Piece part{need, window(p.host, p.box, need), {}};
    const DeviceView d = on_device(part);
    part.host = View{};
    ps.push_back(std::move(part));
    return d;
  }
  check_covered(tensor, need, ps);
  const DType t = ps[0].host.buf ? ps[0].host.dtype : ps[0].dev.dtype();
  DeviceView out = device_alloc(*dev_, t, need.extents());
  std::vector<Box> copied;
  for (Piece& p : ps) {
    const Box part = intersect(p.box, need);
    if (part.empty()) continue;
    for (const Box& u : poly::uncovered(part, copied))
      dev_->copy(window(on_device(p), p.box, u), window(out, need, u));
    copied.push_back(part);
  }
  return out;
}

}  // namespace tapestry
