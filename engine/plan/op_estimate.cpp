#include "engine/plan/op_estimate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "engine/ir/error.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/poly/cost.hpp"

namespace tapestry::plan {

Box grid_block(const poly::Signature& s, const poly::Coords& parts, int64_t k) {
  // grid_blocks numbers blocks row-major, the last index dim fastest.
  Box b = s.space_box();
  for (int j = s.rank() - 1; j >= 0; --j) {
    const int64_t e = s.space[j].extent, n = parts[j], idx = k % n;
    k /= n;
    b.lo[j] = idx * e / n;
    b.hi[j] = (idx + 1) * e / n - 1;
  }
  return b;
}

namespace op_estimate {

void Model::held_by(const Source& s, Rank r, std::vector<Box>& out) const {
  if (s.op < 0) {
    auto it = held.find(s.tensor);
    if (it == held.end()) return;
    auto lo = std::lower_bound(it->second.begin(), it->second.end(), r,
                               [](const std::pair<Rank, Box>& h, Rank x) { return h.first < x; });
    for (; lo != it->second.end() && lo->first == r; ++lo) out.push_back(lo->second);
    return;
  }
  const Candidate& c = cands[s.op][pick[s.op]];
  const poly::Signature& sig = sigs[s.op];
  if (c.replicated) {
    out.push_back(Box::of_shape(sig.output.shape));
    return;
  }
  const int64_t k = ((r - c.rank) % m.ranks + m.ranks) % m.ranks;
  if (k >= blocks(c)) return;
  const Box box = grid_block(sig, c.parts, k);
  int64_t q = 0, partials = 1;  // this block's place among its slice's partials, and how many
  for (int j = 0; j < sig.rank(); ++j)
    if (sig.space[j].kind == poly::IndexDim::Reduction) {
      const int64_t e = sig.space[j].extent, n = c.parts[j];
      q = q * n + (box.lo[j] * n + e - 1) / e;  // grid_block's piece index along j
      partials *= n;
    }
  const Box slice = sig.output_slice(box);
  if (partials == 1 || c.combine == CombineMode::AllReduce) {
    out.push_back(slice);
  } else if (c.combine == CombineMode::Reduce) {
    if (q == 0) out.push_back(slice);
  } else if (slice.rank() > 0) {
    int dim = 0;
    for (int d = 1; d < slice.rank(); ++d)
      if (slice.extent(d) > slice.extent(dim)) dim = d;
    const int64_t e = slice.extent(dim), pieces = std::min(e, partials);
    if (q >= pieces) return;
    Box piece = slice;
    piece.lo[dim] = slice.lo[dim] + q * e / pieces;
    piece.hi[dim] = slice.lo[dim] + (q + 1) * e / pieces - 1;
    out.push_back(piece);
  }
}

int Model::holder_count(const Source& s) const {
  if (s.op < 0) {
    auto it = holders.find(s.tensor);
    return it == holders.end() ? 1 : std::max(1, it->second);
  }
  const Candidate& c = cands[s.op][pick[s.op]];
  if (c.replicated) return m.ranks;
  double n = double(blocks(c));
  if (c.combine == CombineMode::Reduce)
    for (int j = 0; j < sigs[s.op].rank(); ++j)
      if (sigs[s.op].space[j].kind == poly::IndexDim::Reduction) n /= double(c.parts[j]);
  return static_cast<int>(std::max(1.0, std::min(n, double(m.ranks))));
}

const Model::Cuts& Model::cuts_of(const Source& src) const {
  if (src.op < 0) {
    auto [it, fresh] = held_cuts.try_emplace(src.tensor);
    if (fresh) {
      auto h = held.find(src.tensor);
      if (h != held.end() && !h->second.empty()) {
        it->second.resize(static_cast<size_t>(h->second[0].second.rank()));
        for (const auto& [r, box] : h->second)
          for (int d = 0; d < box.rank(); ++d) it->second[static_cast<size_t>(d)].push_back(box.lo[d]);
        for (auto& v : it->second) {
          std::sort(v.begin(), v.end());
          v.erase(std::unique(v.begin(), v.end()), v.end());
        }
      }
    }
    return it->second;
  }
  if (cuts_cache.size() <= size_t(src.op)) cuts_cache.resize(ops.size());
  std::vector<Cuts>& per = cuts_cache[shared(static_cast<size_t>(src.op))];
  if (per.empty()) per.resize(cands[static_cast<size_t>(src.op)].size());
  Cuts& out = per[static_cast<size_t>(pick[static_cast<size_t>(src.op)])];
  if (!out.empty()) return out;
  const Candidate& c =
      cands[static_cast<size_t>(src.op)][static_cast<size_t>(pick[static_cast<size_t>(src.op)])];
  const poly::Signature& sig = sigs[static_cast<size_t>(src.op)];
  const Box all = sig.space_box(), whole = sig.output_slice(all);
  out.assign(static_cast<size_t>(whole.rank()), {});
  for (int d = 0; d < whole.rank(); ++d) out[static_cast<size_t>(d)].push_back(whole.lo[d]);
  int64_t partials = 1;
  for (int j = 0; j < sig.rank() && !c.replicated; ++j) {
    if (sig.space[j].kind == poly::IndexDim::Reduction) {
      partials *= c.parts[j];
      continue;
    }
    for (int64_t q = 1; q < c.parts[j]; ++q) {  // the output slice of piece q along index dim j
      Box b = all;
      b.lo[j] = q * sig.space[j].extent / c.parts[j];
      const Box o = sig.output_slice(b);
      for (int d = 0; d < o.rank(); ++d)
        if (o.lo[d] != whole.lo[d]) out[static_cast<size_t>(d)].push_back(o.lo[d]);
    }
  }
  for (auto& v : out) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  if (partials > 1 && c.combine == CombineMode::ReduceScatter && whole.rank() > 0) {
    // Each output slice in equal pieces along its longest dim (held_by): refine that dim.
    const Box first = sig.output_slice(grid_block(sig, c.parts, 0));
    int dim = 0;
    for (int d = 1; d < first.rank(); ++d)
      if (first.extent(d) > first.extent(dim)) dim = d;
    std::vector<int64_t>& v = out[static_cast<size_t>(dim)];
    std::vector<int64_t> finer;
    for (size_t k = 0; k < v.size(); ++k) {
      const int64_t lo = v[k], hi = k + 1 < v.size() ? v[k + 1] - 1 : whole.hi[dim];
      const int64_t e = hi - lo + 1, n = std::min(e, partials);
      for (int64_t q = 0; q < n; ++q) finer.push_back(lo + q * e / n);
    }
    v = std::move(finer);
  }
  return out;
}

double Model::pieces_in(const Source& src, const Box& box) const {
  const Cuts& cuts = cuts_of(src);
  double n = 1;
  for (int d = 0; d < box.rank() && size_t(d) < cuts.size(); ++d) {
    const std::vector<int64_t>& v = cuts[static_cast<size_t>(d)];
    if (v.empty()) continue;
    const auto first = std::upper_bound(v.begin(), v.end(), box.lo[d]);
    const auto last = std::upper_bound(v.begin(), v.end(), box.hi[d]);
    n *= double(last - first + 1);
  }
  return n;
}

const std::vector<double>& Model::copies(size_t i, size_t c) const {
  i = shared(i);
  if (copies_cache.size() <= i) copies_cache.resize(ops.size());
  if (copies_cache[i].size() <= c) copies_cache[i].resize(cands[i].size());
  std::vector<double>& out = copies_cache[i][c];
  if (!out.empty() || in[i].empty()) return out;
  const Candidate& cand = cands[i][c];
  const poly::Signature& s = sigs[i];
  const Box all = s.space_box();
  for (size_t j = 0; j < in[i].size(); ++j) {
    const Box whole = s.input_slice(j, all);
    double n = 1;
    for (int d = 0; d < s.rank(); ++d) {
      if (cand.parts[d] <= 1) continue;
      Box piece = all;
      piece.hi[d] = piece.lo[d] + (all.hi[d] - all.lo[d] + 1) / cand.parts[d] - 1;
      if (s.input_slice(j, piece) == whole) n *= double(cand.parts[d]);
    }
    out.push_back(cand.replicated ? double(m.ranks) : n);
  }
  return out;
}

const std::vector<int64_t>& Model::reader_strides(size_t i, size_t c) const {
  i = shared(i);
  if (strides_cache.size() <= i) strides_cache.resize(ops.size());
  if (strides_cache[i].size() <= c) strides_cache[i].resize(cands[i].size());
  std::vector<int64_t>& out = strides_cache[i][c];
  if (!out.empty() || in[i].empty()) return out;
  const Candidate& cand = cands[i][c];
  const poly::Signature& s = sigs[i];
  const Box all = s.space_box();
  for (size_t j = 0; j < in[i].size(); ++j) {
    const Box whole = s.input_slice(j, all);
    int64_t stride = 1, least = 0;  // grid_block numbers blocks row-major, the last dim fastest
    for (int d = s.rank() - 1; d >= 0; --d) {
      if (cand.parts[d] > 1 && least == 0) {
        Box piece = all;
        piece.hi[d] = piece.lo[d] + (all.hi[d] - all.lo[d] + 1) / cand.parts[d] - 1;
        if (s.input_slice(j, piece) == whole) least = stride;
      }
      stride *= cand.parts[d];
    }
    out.push_back(cand.replicated ? 1 : least);
  }
  return out;
}

const Link& Model::exchange_link(size_t i, size_t c, size_t j, double bytes) const {
  // A held tensor lies on the low ranks (a parameter on the coordinator), on the node of the
  // first readers; an op's readers share a node when they are less than a node apart.
  const int64_t stride = in[i][j].op < 0 ? 1 : reader_strides(i, c)[j];
  if (stride <= 0 || stride >= m.ranks) return link;
  const Link& near = m.link(0, static_cast<int>(stride));
  return near.time(bytes) > link.time(bytes) ? near : link;
}

const Model::Grid& Model::grid_of(size_t o) const {
  const uint64_t key = (uint64_t(shared(o)) << 32) | uint64_t(static_cast<uint32_t>(pick[o]));
  auto [it, fresh] = grids_cache.try_emplace(key);
  Grid& out = it->second;
  if (!fresh) return out;
  const Candidate& sc = cands[o][static_cast<size_t>(pick[o])];
  const poly::Signature& ss = sigs[o];
  out.dims.resize(static_cast<size_t>(ss.rank()));
  if (sc.replicated) return out.usable = false, out;
  const Box all = ss.space_box(), whole = ss.output_slice(all);
  for (int jd = 0; jd < ss.rank(); ++jd) {
    const int64_t n = sc.parts[jd], e = ss.space[jd].extent;
    Grid::Dim& g = out.dims[static_cast<size_t>(jd)];
    if (n <= 1) continue;
    if (ss.space[jd].kind == poly::IndexDim::Reduction) {
      if (sc.combine == CombineMode::ReduceScatter) out.usable = false;
      continue;
    }
    Box b = all;
    b.lo[jd] = e / n;
    const Box first = ss.output_slice(b);
    for (int x = 0; x < whole.rank(); ++x)
      if (first.lo[x] != whole.lo[x]) g.out_dim = x;
    if (g.out_dim < 0) continue;
    for (int64_t q = 0; q < n; ++q) {
      b.lo[jd] = q * e / n;
      g.starts.push_back(ss.output_slice(b).lo[g.out_dim]);
    }
    if (!std::is_sorted(g.starts.begin(), g.starts.end())) out.usable = false;
  }
  return out;
}

void Model::pieces_of(const Source& src, const Box& need, std::vector<Rank>& out) const {
  out.clear();
  if (src.op < 0) return;
  const size_t o = static_cast<size_t>(src.op);
  const Grid& grid = grid_of(o);
  if (!grid.usable) return;
  const Candidate& sc = cands[o][static_cast<size_t>(pick[o])];
  // Per index dim of the source, the pieces `need` meets: along a parallel dim those whose
  // output slice starts at or before need's ends there, along a reduction dim the first partial
  // (a reduce's result; an all-reduce's lowest rank).
  const size_t d = grid.dims.size();
  range_.assign(2 * d, 0);
  for (size_t jd = 0; jd < d; ++jd) {
    const Grid::Dim& g = grid.dims[jd];
    if (g.out_dim < 0) continue;
    auto last_at_or_before = [&](int64_t at) {
      return std::max<int64_t>(0,
                               std::upper_bound(g.starts.begin(), g.starts.end(), at) - g.starts.begin() - 1);
    };
    range_[2 * jd] = last_at_or_before(need.lo[g.out_dim]);
    range_[2 * jd + 1] = last_at_or_before(need.hi[g.out_dim]);
  }
  // The pieces in row-major order, as the parts of a slice are numbered.
  at_.assign(d, 0);
  for (size_t jd = 0; jd < d; ++jd) at_[jd] = range_[2 * jd];
  for (;;) {
    int64_t k = 0;
    for (size_t jd = 0; jd < d; ++jd) k = k * sc.parts[jd] + at_[jd];
    out.push_back(static_cast<Rank>((k + sc.rank) % m.ranks));
    size_t jd = d;
    for (; jd > 0; --jd) {
      if (++at_[jd - 1] <= range_[2 * (jd - 1) + 1]) break;
      at_[jd - 1] = range_[2 * (jd - 1)];
    }
    if (jd == 0 || out.size() > 64) break;
  }
}

double Model::tree_chain(size_t i, size_t c, size_t j) const {
  const Source& src = in[i][j];
  if (src.op < 0) return 0;
  const size_t o = static_cast<size_t>(src.op);
  const std::array<uint64_t, 5> key{shared(i), c, j, shared(o), static_cast<uint64_t>(pick[o])};
  auto [it, fresh] = chain_cache.try_emplace(key, 0.0);
  if (!fresh) return it->second;
  const Candidate& cand = cands[i][c];
  const poly::Signature& s = sigs[i];
  const int64_t nb = blocks(cand);
  if (cand.replicated || nb > m.ranks || !grid_of(o).usable) return 0;
  // The blocks reading one slice differ only along the index dims the input does not depend
  // on: the first of them has those coordinates 0, and a reader's place among them (in rank
  // order) is its row-major index over those dims.
  const Box all = s.space_box(), whole = s.input_slice(j, all);
  std::vector<char> free_dim(static_cast<size_t>(s.rank()), 0);
  int64_t readers = 1;
  for (int d = 0; d < s.rank(); ++d) {
    if (cand.parts[d] <= 1) continue;
    Box piece = all;
    piece.hi[d] = piece.lo[d] + (all.hi[d] - all.lo[d] + 1) / cand.parts[d] - 1;
    free_dim[static_cast<size_t>(d)] = s.input_slice(j, piece) == whole;
    if (free_dim[static_cast<size_t>(d)]) readers *= cand.parts[d];
  }
  auto first_and_place = [&](int64_t k) {
    int64_t first = 0, place = 0, stride = 1, free_stride = 1;
    for (int d = s.rank() - 1; d >= 0; --d) {
      const int64_t n = cand.parts[d], idx = k % n;
      k /= n;
      if (free_dim[static_cast<size_t>(d)]) place += idx * free_stride, free_stride *= n;
      else first += idx * stride;
      stride *= n;
    }
    return std::pair<int64_t, int64_t>{first, place};
  };
  // Trees in lower()'s order: by the slice's first reader, then by part; part g of a slice of
  // m parts goes to the readers at places g n / m to (g + 1) n / m - 1 (one tree for m = 1).
  // From each sampled block's tree, the chain of roots that first join a tree before it.
  std::vector<Rank> parts, theirs;
  double deepest = 0;
  for (const Sample& b : sampled(i, c, kLookaheadSamples)) {
    const int64_t k0 = ((b.rank - cand.rank) % m.ranks + m.ranks) % m.ranks;
    auto [f, place] = first_and_place(k0);
    pieces_of(src, b.need[j], parts);
    int64_t mp = static_cast<int64_t>(parts.size());
    if (mp == 0) continue;
    int64_t g = mp > 1 && readers > mp ? place * mp / readers : 0;
    double dep = 0;
    for (int step = 0; step < 16; ++step) {
      const Rank root = parts[static_cast<size_t>(g)];
      const int64_t kh = ((root - cand.rank) % m.ranks + m.ranks) % m.ranks;
      if (kh >= nb) break;
      const auto [fh, ph] = first_and_place(kh);
      pieces_of(src, s.input_slice(j, grid_block(s, cand.parts, fh)), theirs);
      const int64_t mh = static_cast<int64_t>(theirs.size());
      if (mh == 0) break;
      const int64_t gh = mh > 1 && readers > mh ? ph * mh / readers : 0;
      // The root reads a part of a tree before this one that it does not hold: it joins that
      // tree first.
      if (!(fh < f || (fh == f && gh < g)) || theirs[static_cast<size_t>(gh)] == root) break;
      dep += 1;
      f = fh, g = gh;
      parts.swap(theirs);
    }
    deepest = std::max(deepest, dep);
  }
  chain_cache[key] = deepest;
  return deepest;
}

const std::vector<Model::Sample>& Model::sampled(size_t i, size_t c, int64_t samples) const {
  auto& cache = samples == kLookaheadSamples ? samples_ahead : samples_full;
  i = shared(i);
  if (cache.size() <= i) cache.resize(ops.size());
  if (cache[i].size() <= c) cache[i].resize(cands[i].size());
  std::vector<Sample>& out = cache[i][c];
  if (!out.empty()) return out;
  const Candidate& cand = cands[i][c];
  const poly::Signature& s = sigs[i];
  const int64_t nb = blocks(cand), ns = std::min(nb, samples);
  for (int64_t q = 0; q < ns; ++q) {
    const int64_t k = ns == nb ? q : q * (nb - 1) / (ns - 1);
    const Box box = grid_block(s, cand.parts, k);
    const poly::BlockCost bc = poly::block_cost(s, box);
    Sample b{static_cast<Rank>((k + cand.rank) % m.ranks),
             m.compute_time(bc.flops, bc.bytes()),
             bc.flops,
             double(bc.output_bytes),
             s.splits_reduction(box),
             {}};
    for (size_t j = 0; j < in[i].size(); ++j) b.need.push_back(s.input_slice(j, box));
    out.push_back(std::move(b));
  }
  return out;
}

double Model::sender_time(double q, double bytes) const {
  if (q <= 0 || bytes <= 0) return 0;
  const double per = bytes / q / link.bandwidth;
  return std::max(q * link.latency + per, link.latency + q * per) + link.latency;
}

Model::OpEstimate Model::detail(size_t i, size_t c, int64_t samples) const {
  const Candidate& cand = cands[i][c];
  const poly::Signature& s = sigs[i];
  const int64_t nb = blocks(cand), ns = std::min(nb, samples);
  const size_t n_in = in[i].size();
  per_input_.assign(4 * n_in, 0.0);
  double* msgs = per_input_.data();
  double* missing = msgs + n_in;
  double* lacking = missing + n_in;
  double* needing = lacking + n_in;  // sampled blocks reading some of input j
  std::vector<Box>& mine = mine_;
  OpEstimate e;
  e.blocks = nb;
  double worst = 0, flops = 0, received = 0, out = 0;
  bool partial = false;
  for (const Sample& b : sampled(i, c, samples)) {
    double t = b.compute, gen = 0;
    bool lacks = false;
    flops += b.flops;
    out += b.output_bytes;
    partial = partial || b.partial;
    for (size_t j = 0; j < n_in; ++j) {
      const Box& need = b.need[j];
      if (need.empty()) continue;
      const double elem = dtype_size(s.inputs[j].dtype);
      if (in[i][j].generate_flops >= 0) {  // computed on the rank that reads it
        const double elems = double(need.volume());
        gen += m.compute_time(elems * in[i][j].generate_flops, elems * elem);
        flops += elems * in[i][j].generate_flops;  // counted as the exact cost counts its blocks
        continue;
      }
      needing[j] += 1;
      mine.clear();
      held_by(in[i][j], b.rank, mine);
      const double before = msgs[j];
      for (const Box& miss : poly::uncovered(need, mine)) {
        const double bytes = double(miss.volume()) * elem;
        t += bytes / link.bandwidth;  // the receiver's link takes one message at a time
        received += bytes;
        missing[j] += bytes;
        msgs[j] += pieces_in(in[i][j], miss);
      }
      if (msgs[j] > before) lacking[j] += 1, lacks = true;
    }
    if (lacks) t += 2 * link.latency;  // the last message's sender overhead, then the wire
    t += gen;
    worst = std::max(worst, t);
    e.compute = std::max(e.compute, b.compute + gen);
  }
  const double scale = double(nb) / double(ns);
  e.flops = flops * scale;
  e.moved = received * scale;
  e.block_bytes = (out + received) / double(ns);
  // The senders' side, as lower() moves each input (lower.hpp) and cost_of() prices it. A slice
  // several ranks read whole from one piece is a broadcast exchange: its collective's formula
  // (collective_cost.hpp) over the slowest link among its members, from its root's arrival, and
  // a root's broadcasts queue on its link (a 16 MiB weight on rank 0 in 256 bands: the last
  // leaves after all the others). Trees whose roots read an earlier tree of the same input wait
  // for it (tree_chain). The parts of a slice read by no more ranks than it has parts (an
  // all-gather), and a slice one block reads (a scatter, a halo), go straight from their
  // holders. The m parts of a slice read by more ranks go down a tree each over a group of
  // readers/m, which then exchange them (m - 1 messages each). Summed over the inputs, whose
  // holders are often the same ranks (a stencil's halo and its weights both leave rank 0).
  double senders = 0, held_sends = 0, held_overhead = 0;
  const std::vector<double>& readers = copies(i, c);
  for (size_t j = 0; j < n_in; ++j) {
    if (missing[j] <= 0) continue;
    // A held tensor's sends (the holder's link alone, not its readers' exchange among groups):
    // totals() lets them start before the op (see OpEstimate::held_sends).
    const double senders_before = senders;
    const bool held_input = in[i][j].op < 0;
    if (!held_input) e.moves_outputs = true;
    const double n = readers[j], parts = msgs[j] / lacking[j], per_msg = missing[j] / msgs[j];
    const double holding = holder_count(in[i][j]), all = msgs[j] * scale;
    if (n <= 1 || (parts > 1 && n <= parts + 1)) {  // straight from the holders
      const double q = std::max(1.0, all / holding);
      senders += sender_time(q, q * per_msg);
      if (held_input) held_sends += senders - senders_before, held_overhead += q * link.latency;
      continue;
    }
    const double groups = std::max(1.0, std::round(parts));
    const double group = n / groups;  // the readers of each tree
    if (group < 1.5) {
      const double q = std::max(1.0, all / n / holding);
      senders += sender_time(q, q * per_msg);
      if (held_input) held_overhead += q * link.latency;
    } else {
      // Two or more readers lacking the whole part: lower() makes the tree a broadcast exchange,
      // which cost_of() prices by its formula from its root's arrival; a holder's broadcasts
      // queue on its link, each for broadcast_root_time. A reader holding its slice already
      // (the root's own block) leaves its tree one reader short: a tree of two readers is then
      // one message.
      const double holds = (needing[j] - lacking[j]) * scale;
      const double trees = (all + holds) / n;  // slice parts with a tree each
      const double shorter = std::min(trees, holds), full = trees - shorter;
      const double per = std::max(1.0, trees / holding) / trees;  // a holder's share
      const int p = static_cast<int>(std::lround(group)) + 1;
      const Link& l = exchange_link(i, c, j, per_msg);
      const double root = broadcast_root_time(l, p, per_msg);  // the whole collective
      const double short_root =
          p - 1 >= 3 ? broadcast_root_time(l, p - 1, per_msg) : link.latency + per_msg / link.bandwidth;
      senders += per * (full * root + shorter * short_root) + (full > 0 ? 0 : link.latency);
      if (held_input) held_overhead += per * trees * link.latency;  // the root's program joins each
      senders += tree_chain(i, c, j) * broadcast_time(l, p, per_msg).time;
    }
    if (held_input) held_sends += senders - senders_before;
    if (groups > 1) senders += sender_time(groups - 1, (groups - 1) * per_msg);
  }
  double combine = 0;
  if (partial) {  // the partials of each output slice merged as the candidate's collective
    double per_slice = 1;
    for (int j = 0; j < s.rank(); ++j)
      if (s.space[j].kind == poly::IndexDim::Reduction) per_slice *= double(cand.parts[j]);
    const int p = static_cast<int>(std::min<double>(per_slice, m.ranks));
    const double bytes = s.output.bytes() / double(nb) * per_slice;  // one output slice
    combine = cand.combine == CombineMode::AllReduce ? all_reduce_time(link, p, bytes, m.mem_bytes_per_s).time
              : cand.combine == CombineMode::ReduceScatter
                  ? reduce_scatter_time(link, p, bytes, m.mem_bytes_per_s).time
                  : reduce_time(link, p, bytes, m.mem_bytes_per_s).time;
    // Every partial but one per slice is sent once; an all-reduce sends the result back too.
    e.moved += (per_slice - 1) * s.output.bytes() * (cand.combine == CombineMode::AllReduce ? 2 : 1);
  }
  e.time = std::max(worst, e.compute + senders) + combine;
  e.held_sends = held_sends;
  e.held_overhead = std::min(held_sends, held_overhead);
  e.held_slack = std::max(0.0, std::min(held_sends, e.compute + senders - worst));
  return e;
}

PlanCost Model::totals() const {
  std::vector<OpEstimate> per_op;
  for (size_t i = 0; i < ops.size(); ++i) per_op.push_back(detail(i, static_cast<size_t>(pick[i])));
  return totals(per_op);
}

PlanCost Model::totals(const std::vector<OpEstimate>& per_op) const {
  PlanCost c;
  double peak = 0;
  // A held tensor's holder sends it first, before its own blocks: lower() puts every held
  // tensor's sends, for every op, at the head of its holder's program. So (one holder, the
  // coordinator, as parameters are; several would send side by side, so this is the slower bound)
  // - its link has carried the held sends up to op i's by `link`, and op i waits only for what is
  //   still on the wire when it starts (the sends of a later op run while earlier ops compute);
  // - its program pays every message's overhead first (1,023 sends of a weight's pieces are 2 ms of
  //   rank 0's time), then runs its blocks: the plan takes at least all the overheads plus every
  //   op's time without its held sends (`holder`);
  // - an op that moves an earlier op's output, whose pieces the holder sends too (a halo of its
  //   block), moves it once the last held send is off the link.
  double held_sent = 0, all_held = 0, holder = 0;
  for (const OpEstimate& e : per_op) all_held += e.held_sends, holder += e.held_overhead;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpEstimate& e = per_op[i];
    held_sent += e.held_sends;
    const double start = c.time, rest = e.time - e.held_sends;
    const double waits = std::clamp(held_sent - start, 0.0, e.held_sends);
    c.time += e.time - std::min(e.held_sends - waits, e.held_slack);
    if (e.moves_outputs && start < all_held) c.time = std::max(c.time, all_held + rest);
    holder += rest;
    c.flops += e.flops;
    c.bytes_moved += static_cast<int64_t>(e.moved);
    const int64_t per_rank = (e.blocks + m.ranks - 1) / m.ranks;
    peak += double(per_rank) * e.block_bytes;
  }
  c.time = std::max(c.time, holder);
  c.peak_bytes = static_cast<int64_t>(peak + held_peak);
  if (double(c.peak_bytes) > m.mem_bytes_per_rank)  // a limit, as cost_of's (cost.hpp)
    c.memory_penalty = kOverMemory + (double(c.peak_bytes) - m.mem_bytes_per_rank) * 1e-6;
  return c;
}

}  // namespace op_estimate
}  // namespace tapestry::plan
