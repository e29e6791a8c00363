#include "engine/plan/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>

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

namespace {

// Blocks sampled per candidate: the first and last few carry the uneven pieces and the ranks
// at the ends of the mesh; the rest are spread evenly between them.
constexpr int64_t kSamples = 24;
// The greedy start's lookahead prices every candidate of every user for every candidate of
// each op (about 20 x 20 per edge on a big mesh): it takes fewer samples, the ends and two
// between, enough to rank the users' responses.
constexpr int64_t kLookaheadSamples = 4;
// Joint moves in a row without a gain before the refinement on the estimate gives up.
constexpr size_t kPatience = 32;

// Where an op's input comes from: an earlier op (its chosen candidate) or a tensor held in `initial`.
struct Source {
  int op = -1;
  uint64_t tensor = 0;
  double generate_flops = -1;  // >= 0: generated where read (flops per element), never moved
};

struct Model {
  const Mesh& m;
  const Link& link;  // of a typical pair of ranks: the network once the mesh spans nodes
  std::vector<NodeRef> ops;
  std::vector<poly::Signature> sigs;
  std::vector<std::vector<Candidate>> cands;
  std::vector<std::vector<Source>> in;  // per op, per input
  std::vector<std::vector<int>> users;  // per op: the later ops reading it, each once
  std::vector<char> after_an_op;        // per op: whether it reads an earlier op's output
  std::unordered_map<uint64_t, std::vector<std::pair<Rank, Box>>> held;  // initial, by rank
  std::unordered_map<uint64_t, int> holders;                             // distinct ranks
  std::vector<int> pick;
  double held_peak = 0;  // the largest bytes of `initial` on one rank

  explicit Model(const Mesh& mesh)
      : m(mesh), link(mesh.ranks > mesh.ranks_per_node ? mesh.inter : mesh.intra) {}

  int64_t blocks(const Candidate& c) const { return c.block_count(m.ranks); }

  // The pieces of `s` that rank r holds once its producer has run, as lower() leaves them: a
  // split reduction's combined slices on the rank of their first partial (reduce), on every rank
  // of a partial (all-reduce), or in equal pieces along the slice's longest dim, one per such
  // rank in block order (reduce-scatter).
  void held_by(const Source& s, Rank r, std::vector<Box>& out) const {
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

  // The ranks holding a source once its producer has run (held_by's pieces).
  int holder_count(const Source& s) const {
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

  // Op i run as its candidate c, given its producers' picks: the estimated time (what the
  // search minimizes) and, scaled from the sampled blocks to all of them, its flops, the bytes
  // it moves, and what its blocks leave on a rank.
  struct OpEstimate {
    double time = 0, flops = 0, moved = 0;
    double block_bytes = 0;  // per block on average: its output plus the slices it received
    double compute = 0;      // the busiest sampled block's compute (its inputs generated included)
    int64_t blocks = 0;
  };

  // A sampled block of op i as candidate c: what does not depend on the other ops' picks,
  // computed once, since the greedy lookahead prices the same candidates over and over.
  struct Sample {
    Rank rank;
    double compute, flops, output_bytes;
    bool partial;           // it splits a reduction dim
    std::vector<Box> need;  // per input: the slice it reads
  };
  mutable std::vector<std::vector<std::vector<Sample>>> samples_full, samples_ahead;  // [op][candidate]
  mutable std::vector<std::vector<std::vector<double>>> copies_cache;  // [op][candidate][input]

  // Where a source's pieces start along each of its dims (sorted), as held_by cuts it: a box
  // spans as many pieces as the product of the pieces it meets along each dim, and lower()
  // sends one message per piece (an all-gather of 64 pieces is 63 messages to each reader).
  using Cuts = std::vector<std::vector<int64_t>>;
  mutable std::vector<std::vector<Cuts>> cuts_cache;  // [op][candidate]
  mutable std::unordered_map<uint64_t, Cuts> held_cuts;
  const Cuts& cuts_of(const Source& src) const {
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
    std::vector<Cuts>& per = cuts_cache[static_cast<size_t>(src.op)];
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

  // How many pieces of `src` the box meets (cuts_of).
  double pieces_in(const Source& src, const Box& box) const {
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

  // Per input of op i as candidate c: how many blocks read each distinct slice of it (the
  // product of the parts of the index dims it does not depend on: a weight every row block
  // reads whole has as many readers as row blocks).
  const std::vector<double>& copies(size_t i, size_t c) const {
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

  const std::vector<Sample>& sampled(size_t i, size_t c, int64_t samples) const {
    auto& cache = samples == kLookaheadSamples ? samples_ahead : samples_full;
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

  // The objective of op i as candidate c: its time, plus its bytes at bytes_weight (weigh()).
  double bytes_weight = 0;
  double estimate(size_t i, size_t c, int64_t samples = kSamples) const {
    const OpEstimate e = detail(i, c, samples);
    return e.time + bytes_weight * e.moved;
  }

  // When the last of q messages of `bytes` in all, sent one after another by one rank, has
  // arrived, as cost_of() simulates it: the sender's program pays each message's overhead, its
  // link carries one message at a time, and the last then crosses the wire.
  double sender_time(double q, double bytes) const {
    if (q <= 0 || bytes <= 0) return 0;
    const double per = bytes / q / link.bandwidth;
    return std::max(q * link.latency + per, link.latency + q * per) + link.latency;
  }

  OpEstimate detail(size_t i, size_t c, int64_t samples = kSamples) const {
    const Candidate& cand = cands[i][c];
    const poly::Signature& s = sigs[i];
    const int64_t nb = blocks(cand), ns = std::min(nb, samples);
    const size_t n_in = in[i].size();
    std::vector<double> msgs(n_in, 0.0), missing(n_in, 0.0), needed(n_in, 0.0), lacking(n_in, 0.0);
    std::vector<Box> mine;
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
        needed[j] += double(need.volume()) * elem;
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
    // The senders' side, as lower() moves each input (lower.hpp). A slice several blocks read
    // whole from one piece goes down a binomial tree, whose root sends ceil(log2(readers + 1))
    // copies and whose last reader is that many rounds away. The parts of a slice read by no
    // more ranks than it has parts (an all-gather), and a slice one block reads (a scatter, a
    // halo), go straight from their holders. The m parts of a slice read by more ranks go down a
    // tree each over a group of readers/m, which then exchange them (m - 1 messages each). A
    // holder sends its share of the messages one after another (a 128 MiB weight on rank 0 cut
    // in column bands: the last band leaves after all the others); summed over the inputs,
    // whose holders are often the same ranks (a stencil's halo and its weights both leave rank 0).
    double senders = 0;
    const std::vector<double>& readers = copies(i, c);
    for (size_t j = 0; j < n_in; ++j) {
      if (missing[j] <= 0) continue;
      const double n = readers[j], parts = msgs[j] / lacking[j], per_msg = missing[j] / msgs[j];
      const double holding = holder_count(in[i][j]), all = msgs[j] * scale;
      if (n <= 1 || (parts > 1 && n <= parts + 1)) {  // straight from the holders
        const double q = std::max(1.0, all / holding);
        senders += sender_time(q, q * per_msg);
        continue;
      }
      const double groups = std::max(1.0, std::round(parts));
      const double k = std::ceil(std::log2(n / groups + 1));  // rounds of each tree
      const double trees = all / n;                           // slice parts with a tree each
      const double q = std::max(1.0, trees / holding) * k;    // a holder's root messages
      // The relays add a wire latency per round. A held tensor's tree starts with the plan
      // (lower() sends held data first), so behind an op that reads an earlier op's output its
      // rounds have already run.
      senders +=
          sender_time(q, q * per_msg) + (in[i][j].op < 0 && after_an_op[i] ? 0.0 : (k - 1) * link.latency);
      if (groups > 1) senders += sender_time(groups - 1, (groups - 1) * per_msg);
    }
    double combine = 0;
    if (partial) {  // the partials of each output slice merged as the candidate's collective
      double per_slice = 1;
      for (int j = 0; j < s.rank(); ++j)
        if (s.space[j].kind == poly::IndexDim::Reduction) per_slice *= double(cand.parts[j]);
      const int p = static_cast<int>(std::min<double>(per_slice, m.ranks));
      const double bytes = s.output.bytes() / double(nb) * per_slice;  // one output slice
      combine = cand.combine == CombineMode::AllReduce
                    ? all_reduce_time(link, p, bytes, m.mem_bytes_per_s).time
                : cand.combine == CombineMode::ReduceScatter
                    ? reduce_scatter_time(link, p, bytes, m.mem_bytes_per_s).time
                    : reduce_time(link, p, bytes, m.mem_bytes_per_s).time;
      // Every partial but one per slice is sent once; an all-reduce sends the result back too.
      e.moved += (per_slice - 1) * s.output.bytes() * (cand.combine == CombineMode::AllReduce ? 2 : 1);
    }
    e.time = std::max(worst, e.compute + senders) + combine;
    return e;
  }

  // The plan's cost as estimated for the current picks: the time is the search's objective
  // (ops one after another), the peak the held inputs plus every op's blocks on the busiest
  // rank, nothing freed -- the same upper bound cost_of() computes exactly.
  PlanCost totals() const {
    PlanCost c;
    double peak = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpEstimate e = detail(i, static_cast<size_t>(pick[i]));
      c.time += e.time;
      c.flops += e.flops;
      c.bytes_moved += static_cast<int64_t>(e.moved);
      const int64_t per_rank = (e.blocks + m.ranks - 1) / m.ranks;
      peak += double(per_rank) * e.block_bytes;
    }
    c.peak_bytes = static_cast<int64_t>(peak + held_peak);
    if (double(c.peak_bytes) > m.mem_bytes_per_rank)  // a limit, as cost_of's (cost.hpp)
      c.memory_penalty = kOverMemory + (double(c.peak_bytes) - m.mem_bytes_per_rank) * 1e-6;
    return c;
  }
};

std::vector<Candidate> allowed(const poly::Signature& s, const NodeRef& n, const Mesh& m,
                               const SearchOptions& opt) {
  std::vector<Candidate> all = candidates(s, m.ranks, opt.replicated.count(n->id) > 0);
  if (!opt.output_grid.count(n->id) && !opt.replicated.count(n->id)) return all;
  std::vector<Candidate> kept;
  for (const Candidate& c : all)
    if (meets_constraint(n->id, s, c, place(s, c, m.ranks), opt)) kept.push_back(c);
  user_check(!kept.empty(), "no plan on ", m.ranks, " ranks gives the requested layout to a ",
             op_def(n->op).name, " of shape ", shape_str(n->shape));
  return kept;
}

// Builds the model of ops_to_place(topo, initial, roots) on md's mesh: signatures, allowed
// candidates, where each input comes from and who reads each op.
void build_model(Model& md, const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                 const std::vector<NodeRef>& roots, const SearchOptions& opt) {
  const Mesh& m = md.m;
  md.ops = ops_to_place(topo, initial, roots);
  const size_t n_ops = md.ops.size();
  std::unordered_map<uint64_t, int> index;
  for (size_t i = 0; i < n_ops; ++i) index.emplace(md.ops[i]->id, static_cast<int>(i));
  for (const Shard& h : initial) md.held[h.tensor].push_back({h.rank, h.box});
  {
    std::unordered_map<uint64_t, double> elem;  // bytes per element of each held tensor
    for (const NodeRef& n : topo) elem[n->id] = double(dtype_size(n->dtype));
    std::unordered_map<Rank, double> on;
    for (const Shard& h : initial) on[h.rank] += double(h.box.volume()) * elem[h.tensor];
    for (const auto& [r, b] : on) md.held_peak = std::max(md.held_peak, b);
  }
  for (auto& [t, v] : md.held) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int distinct = 0;
    for (size_t k = 0; k < v.size(); ++k) distinct += k == 0 || v[k].first != v[k - 1].first;
    md.holders[t] = distinct;
  }
  md.users.resize(n_ops);
  for (size_t i = 0; i < n_ops; ++i) {
    const NodeRef& n = md.ops[i];
    md.sigs.push_back(poly::signature_of(*n));
    md.cands.push_back(allowed(md.sigs.back(), n, m, opt));
    std::vector<Source> src;
    for (const NodeRef& x : n->inputs) {
      auto it = index.find(x->id);
      Source from = it == index.end() ? Source{-1, x->id} : Source{it->second, x->id};
      if (it == index.end() && generated_where_read(*x, initial, roots))
        from.generate_flops = poly::signature_of(*x).flops_per_point;
      src.push_back(from);
      if (it != index.end() && (md.users[it->second].empty() || md.users[it->second].back() != int(i)))
        md.users[it->second].push_back(static_cast<int>(i));
    }
    md.after_an_op.push_back(std::any_of(src.begin(), src.end(), [](const Source& x) { return x.op >= 0; }));
    md.in.push_back(std::move(src));
  }
}

// Inputs read as if every rank held them whole (a stand-in tensor per tensor rank), so that an
// op's estimate leaves out what its producers' layouts cost it.
Source everywhere(Model& md, size_t dims) {
  const uint64_t id = ~uint64_t(0) - dims;
  std::vector<std::pair<Rank, Box>>& v = md.held[id];
  if (v.empty()) {
    for (Rank r = 0; r < md.m.ranks; ++r)
      v.push_back(
          {r, Box(poly::Coords(dims, 0), poly::Coords(dims, std::numeric_limits<int64_t>::max() / 4))});
    md.holders[id] = md.m.ranks;
  }
  return Source{-1, id};
}

// Where a held tensor lies, as a hash: two weights loaded the same way cost the same to read.
uint64_t layout_hash(const Model& md, uint64_t tensor) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull; };
  auto it = md.held.find(tensor);
  if (it == md.held.end()) return h;
  for (const auto& [r, box] : it->second) {
    mix(r);
    for (int64_t v : box.lo) mix(v);
    for (int64_t v : box.hi) mix(v);
  }
  return h;
}

// What an op's estimate depends on besides its producers' picks: its signature, where its
// other inputs come from, its allowed candidates. Ops with equal keys have equal tables (the
// 1,000 ops of a repeated layer cost 5 ops' worth).
std::string key_of(const Model& md, size_t i, const SearchOptions& opt) {
  std::string k = poly::to_string(md.sigs[i]);
  for (size_t j = 0; j < md.in[i].size(); ++j) {
    const Source& s = md.in[i][j];
    k += cat_str("|", shape_str(md.sigs[i].inputs[j].shape), dtype_size(md.sigs[i].inputs[j].dtype),
                 s.op >= 0               ? std::string("op")
                 : s.generate_flops >= 0 ? cat_str("g", s.generate_flops)
                                         : cat_str("h", layout_hash(md, s.tensor)));
  }
  const uint64_t id = md.ops[i]->id;
  if (opt.output_grid.count(id) || opt.replicated.count(id)) k += cat_str("|c", id);
  return k;
}

// The estimate as node and edge costs for the global stage: an op's node cost is its estimate
// with every producer's output already where it reads it; the edge from producer p is what p's
// candidate adds to that (its estimate with p's input moved, the others in place, minus the
// node cost; exact for an op with one producer, the sum of the parts for more).
struct Pairwise {
  CostGraph graph;  // time (the objective's tables: time + bytes_weight x bytes, see weigh())
  CostGraph bytes;  // the bytes each node and edge moves, in the same layout
  std::vector<std::vector<double>> compute;  // [op][candidate]: its busiest sampled block's compute
};
Pairwise pairwise(Model& md, const SearchOptions& opt) {
  const size_t n = md.ops.size();
  Pairwise out;
  CostGraph& g = out.graph;
  g.node.resize(n);
  out.bytes.node.resize(n);
  out.compute.resize(n);
  std::unordered_map<std::string, std::vector<double>> nodes, edges, computes, node_bytes, edge_bytes;
  const std::vector<int> saved = md.pick;
  md.pick.assign(n, 0);
  for (size_t u = 0; u < n; ++u) {
    const std::vector<Source> from = md.in[u];
    std::vector<int> producers;
    for (const Source& s : from)
      if (s.op >= 0 && std::find(producers.begin(), producers.end(), s.op) == producers.end())
        producers.push_back(s.op);
    const std::string key = key_of(md, u, opt);
    for (size_t j = 0; j < from.size(); ++j)
      if (from[j].op >= 0) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
    const size_t cu_n = md.cands[u].size();
    auto [nit, fresh] = nodes.try_emplace(key);
    std::vector<double>& comp = computes[key];
    std::vector<double>& nb = node_bytes[key];
    if (fresh)
      for (size_t cu = 0; cu < cu_n; ++cu) {
        const Model::OpEstimate e = md.detail(u, cu);
        // A candidate whose own blocks on one rank, beside the held inputs, pass the memory per
        // rank is out whatever the others do: the limit's penalty, as cost_of charges it.
        const double mine = double((e.blocks + md.m.ranks - 1) / md.m.ranks) * e.block_bytes + md.held_peak;
        nit->second.push_back(e.time + (mine > md.m.mem_bytes_per_rank ? kOverMemory : 0.0));
        comp.push_back(e.compute);
        nb.push_back(e.moved);
      }
    g.node[u] = nit->second;
    out.bytes.node[u] = nb;
    out.compute[u] = comp;
    std::vector<Model::OpEstimate> base;  // with the edges' samples
    for (int p : producers) {
      std::string ekey = key + "<-" + key_of(md, static_cast<size_t>(p), opt);
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = from[j], ekey += cat_str(",", j);
      auto [eit, new_edge] = edges.try_emplace(ekey);
      std::vector<double>& eb = edge_bytes[ekey];
      if (new_edge) {
        if (base.empty()) {
          std::vector<Source> moved = md.in[u];
          for (size_t j = 0; j < from.size(); ++j)
            if (from[j].op >= 0) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
          for (size_t cu = 0; cu < cu_n; ++cu) base.push_back(md.detail(u, cu, kLookaheadSamples));
          md.in[u] = moved;
        }
        for (size_t cp = 0; cp < md.cands[p].size(); ++cp) {
          md.pick[p] = static_cast<int>(cp);
          for (size_t cu = 0; cu < cu_n; ++cu) {
            const Model::OpEstimate e = md.detail(u, cu, kLookaheadSamples);
            eit->second.push_back(e.time - base[cu].time);
            eb.push_back(e.moved - base[cu].moved);
          }
        }
        md.pick[p] = 0;
      }
      g.edges.push_back(CostGraph::Edge{p, static_cast<int>(u), eit->second});
      out.bytes.edges.push_back(CostGraph::Edge{p, static_cast<int>(u), eb});
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
    }
    md.in[u] = from;
  }
  md.pick = saved;
  return out;
}

// The objective's tables: time plus bytes at bytes_weight seconds each, the weight set from the
// time tables' optimum so that moving nothing at all would be worth opt.bytes_weight of its
// time (search.hpp). None when that optimum moves nothing or is over the memory limit.
std::pair<CostGraph, double> weigh(const Pairwise& t, const SearchOptions& opt) {
  const std::vector<int> fastest = solve(t.graph).pick;
  const double time = total(t.graph, fastest), bytes = total(t.bytes, fastest);
  const double w = bytes > 0 && time < kOverMemory ? opt.bytes_weight * time / bytes : 0.0;
  CostGraph g = t.graph;
  for (size_t i = 0; i < g.node.size(); ++i)
    for (size_t c = 0; c < g.node[i].size(); ++c) g.node[i][c] += w * t.bytes.node[i][c];
  for (size_t e = 0; e < g.edges.size(); ++e)
    for (size_t k = 0; k < g.edges[e].cost.size(); ++k) g.edges[e].cost[k] += w * t.bytes.edges[e].cost[k];
  return {std::move(g), w};
}

}  // namespace

GlobalStart global_start(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                         const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  Model md(m);
  build_model(md, topo, initial, roots, opt);
  GlobalStart s;
  std::tie(s.graph, s.bytes_weight) = weigh(pairwise(md, opt), opt);
  s.choice = solve(s.graph);
  return s;
}

Plan search_estimated(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                      const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  Model md(m);
  build_model(md, topo, initial, roots, opt);
  const size_t n_ops = md.ops.size();

  // The start: the global optimum of the estimate as node and edge costs (global_search.hpp);
  // SearchOptions::Greedy takes the greedy one with a step of lookahead instead: in order, each
  // op takes the candidate that minimizes its own estimate plus its users' best responses to it,
  // so a cheap op (a broadcast bias) does not pick a layout every op after it would move away from.
  md.pick.assign(n_ops, 0);
  Pairwise tables;
  CostGraph objective;  // tables.graph with the bytes weighed in (weigh())
  if (opt.method == SearchOptions::Greedy) {
    for (size_t i = 0; i < n_ops; ++i) {
      double best = INFINITY;
      for (size_t c = 0; c < md.cands[i].size(); ++c) {
        double ahead = md.estimate(i, c);
        for (int u : md.users[i]) {
          double r = INFINITY;
          for (size_t cu = 0; cu < md.cands[u].size(); ++cu)
            r = std::min(r, md.estimate(u, cu, kLookaheadSamples));
          ahead += r;
        }
        if (ahead < best * (1 - 1e-9)) best = ahead, md.pick[i] = static_cast<int>(c);
      }
    }
  } else {
    tables = pairwise(md, opt);
    std::tie(objective, md.bytes_weight) = weigh(tables, opt);
    md.pick = solve(objective).pick;
  }
  // Joint moves refine the start on the estimate itself (the sum over ops), for at most
  // opt.steps of them; a move re-estimates only the ops it changes and their readers.
  int evaluations = 1;  // joint choices costed: the start, then each move
  if (opt.method == SearchOptions::Anneal && n_ops > 0) {
    std::vector<int> best = md.pick, base = md.pick;
    std::vector<double> at_base(n_ops);  // each op's estimate with `base` picked
    double best_cost = 0;
    for (size_t i = 0; i < n_ops; ++i)
      best_cost += at_base[i] = md.estimate(i, static_cast<size_t>(md.pick[i]));
    std::vector<int> touched;
    auto changed = [&](const std::vector<int>& st) {  // ops whose estimate differs from base's
      touched.clear();
      for (size_t i = 0; i < n_ops; ++i)
        if (st[i] != base[i]) {
          touched.push_back(static_cast<int>(i));
          touched.insert(touched.end(), md.users[i].begin(), md.users[i].end());
        }
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    };
    auto cost = [&](const std::vector<int>& st) {
      if (base != best) {  // the refinement kept a move: estimates follow it
        changed(best);
        md.pick = best;
        for (int i : touched) at_base[i] = md.estimate(i, static_cast<size_t>(best[i]));
        base = best;
      }
      ++evaluations;
      changed(st);
      md.pick = st;
      double t = best_cost;
      for (int i : touched) t += md.estimate(i, static_cast<size_t>(st[i])) - at_base[i];
      md.pick = base;
      return t;
    };
    refine(
        objective, best, best_cost, cost, [&] { return evaluations <= opt.steps; }, kPatience);
    md.pick = best;
  }
  std::vector<int> best = md.pick;

  double cur = 0, cur_compute = 0;
  std::vector<double> est(n_ops), est_compute(n_ops);  // of each op's pick: its users' picks leave compute be
  for (size_t i = 0; i < n_ops; ++i) {
    const Model::OpEstimate e = md.detail(i, static_cast<size_t>(md.pick[i]));
    est[i] = e.time, est_compute[i] = e.compute;
    cur += est[i], cur_compute += est_compute[i];
  }
  // For tp.explain, every other candidate of an op with the rest as picked: by the global stage's
  // node and edge costs where it ran (no estimate per candidate), else by the estimate.
  std::vector<std::vector<Tried>> seen(n_ops);  // [op][candidate]: the best plan with it
  std::vector<std::vector<int>> at(n_ops);      // the global stage's edges per op
  for (size_t e = 0; e < tables.graph.edges.size(); ++e) {
    at[tables.graph.edges[e].a].push_back(static_cast<int>(e));
    at[tables.graph.edges[e].b].push_back(static_cast<int>(e));
  }
  auto modelled = [&](size_t i, size_t c) {
    double t = tables.graph.node[i][c];
    for (int e : at[i]) {
      const CostGraph::Edge& ed = tables.graph.edges[e];
      const size_t a = ed.a == int(i) ? c : md.pick[ed.a], b = ed.b == int(i) ? c : md.pick[ed.b];
      t += ed.cost[a * tables.graph.node[ed.b].size() + b];
    }
    return t;
  };
  for (size_t i = 0; i < n_ops; ++i) {
    const size_t own = static_cast<size_t>(md.pick[i]);
    for (size_t c = 0; c < md.cands[i].size(); ++c) {
      double t = est[i], comp = est_compute[i];
      if (c != own && tables.graph.node.empty()) {
        const Model::OpEstimate e = md.detail(i, c);
        t = e.time, comp = e.compute;
      } else if (c != own) {
        t = est[i] + modelled(i, c) - modelled(i, own);
        comp = tables.compute[i][c];
      }
      seen[i].push_back(Tried{md.cands[i][c], cur - est[i] + t, cur_compute - est_compute[i] + comp});
    }
  }

  Plan p;
  p.estimated = true;
  p.evaluations = evaluations;
  md.pick = best;
  for (size_t i = 0; i < n_ops; ++i) {
    const Candidate& c = md.cands[i][best[i]];
    p.choice[md.ops[i]->id] = c;
    p.blocks += c.block_count(m.ranks);
    for (size_t k = 0; k < md.cands[i].size(); ++k)
      if (std::isfinite(seen[i][k].best_total)) p.tried[md.ops[i]->id].push_back(seen[i][k]);
  }
  p.cost = md.totals();
  p.cost.estimated = true;
  p.defer_lowering(LoweringInput{topo, initial, roots, m});
  return p;
}

}  // namespace tapestry::plan
