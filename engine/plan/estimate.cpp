#include "engine/plan/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
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
// Inputs up to this size that every block reads whole are priced as a broadcast tree.
constexpr double kTreeBytes = 64 * 1024;
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
  std::unordered_map<uint64_t, std::vector<std::pair<Rank, Box>>> held;  // initial, by rank
  std::unordered_map<uint64_t, int> holders;                             // distinct ranks
  std::vector<int> pick;
  double held_peak = 0;  // the largest bytes of `initial` on one rank

  explicit Model(const Mesh& mesh)
      : m(mesh), link(mesh.ranks > mesh.ranks_per_node ? mesh.inter : mesh.intra) {}

  int64_t blocks(const Candidate& c) const { return c.block_count(m.ranks); }

  // The pieces of `s` that rank r holds once its producer has run (a split reduction's
  // combined slices lie on the rank of their first partial, as lower() puts them).
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
    const int64_t k = ((r - c.rank) % m.ranks + m.ranks) % m.ranks;
    if (k >= blocks(c)) return;
    const Box box = grid_block(sig, c.parts, k);
    for (int j = 0; j < sig.rank(); ++j)
      if (sig.space[j].kind == poly::IndexDim::Reduction && box.lo[j] != 0) return;
    out.push_back(sig.output_slice(box));
  }

  int holder_count(const Source& s) const {
    if (s.op >= 0) return static_cast<int>(std::min<int64_t>(blocks(cands[s.op][pick[s.op]]), m.ranks));
    auto it = holders.find(s.tensor);
    return it == holders.end() ? 1 : std::max(1, it->second);
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

  double estimate(size_t i, size_t c, int64_t samples = kSamples) const { return detail(i, c, samples).time; }

  OpEstimate detail(size_t i, size_t c, int64_t samples = kSamples) const {
    const Candidate& cand = cands[i][c];
    const poly::Signature& s = sigs[i];
    const int64_t nb = blocks(cand), ns = std::min(nb, samples);
    std::vector<double> msgs(in[i].size(), 0.0), missing(in[i].size(), 0.0), needed(in[i].size(), 0.0);
    std::vector<Box> mine;
    OpEstimate e;
    e.blocks = nb;
    double worst = 0, flops = 0, received = 0, out = 0;
    bool partial = false;
    for (const Sample& b : sampled(i, c, samples)) {
      double t = b.compute, gen = 0;
      flops += b.flops;
      out += b.output_bytes;
      partial = partial || b.partial;
      for (size_t j = 0; j < in[i].size(); ++j) {
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
        for (const Box& miss : poly::uncovered(need, mine)) {
          const double bytes = double(miss.volume()) * elem;
          t += link.time(bytes);  // the receiver's link takes one message at a time
          received += bytes;
          missing[j] += bytes;
          msgs[j] += 1;
        }
      }
      t += gen;
      worst = std::max(worst, t);
      e.compute = std::max(e.compute, b.compute + gen);
    }
    const double scale = double(nb) / double(ns);
    e.flops = flops * scale;
    e.moved = received * scale;
    e.block_bytes = (out + received) / double(ns);
    // A sender pays each message's overhead: a value on few ranks feeding many blocks queues them.
    // A small value every block reads whole (a stencil's weights) travels down a tree instead
    // (lower()'s relays: the holders double every round), so a sender pays one message per
    // round. Big ones keep the queue: the relays' copies then contend with the rest of the step
    // (on W9 a tree estimate picked a plan that simulates 1.7x slower). A scatter -- each slice
    // read by one block, so no relay forwards it -- also queues its bytes on the holder's link:
    // a 128 MiB weight on rank 0 sent in column bands, the last band leaves after all the others.
    double senders = 0, scatter = 0;
    const std::vector<double>& readers = copies(i, c);
    for (size_t j = 0; j < in[i].size(); ++j) {
      if (missing[j] <= 0) continue;
      const double holders = holder_count(in[i][j]), per_holder = msgs[j] * scale / holders;
      const bool whole = needed[j] >= double(ns) * s.inputs[j].bytes() * (1 - 1e-9);
      const bool tree = whole && s.inputs[j].bytes() <= kTreeBytes;
      senders = std::max(senders, (tree ? std::ceil(std::log2(1 + per_holder)) : per_holder) * link.latency);
      if (readers[j] <= 1) scatter = std::max(scatter, missing[j] * scale / holders / link.bandwidth);
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
      e.moved += (per_slice - 1) * s.output.bytes();  // every partial but one per slice is sent once
    }
    e.time = std::max(worst, e.compute + scatter) + senders + combine;
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
  std::vector<Candidate> all = candidates_of(s, *n, m.ranks, opt);
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

// The ranks holding a producer's output once it has run: a reduced split's slices lie on one
// rank each (the first partial's), not on every rank that made a partial.
double holders_of(const Model& md, const Source& s, const Candidate& c, const poly::Signature& sig) {
  double n = double(md.holder_count(s));
  if (c.combine == CombineMode::Reduce)
    for (int j = 0; j < sig.rank(); ++j)
      if (sig.space[j].kind == poly::IndexDim::Reduction) n /= double(c.parts[j]);
  return std::max(1.0, n);
}

// The estimate as node and edge costs for the global stage: an op's node cost is its estimate
// with every producer's output already where it reads it; the edge from producer p is what p's
// candidate adds to that (its estimate with p's input moved, the others in place, minus the
// node cost; exact for an op with one producer, the sum of the parts for more).
struct Pairwise {
  CostGraph graph;
  std::vector<std::vector<double>> compute;  // [op][candidate]: its busiest sampled block's compute
};
Pairwise pairwise(Model& md, const SearchOptions& opt) {
  const size_t n = md.ops.size();
  Pairwise out;
  CostGraph& g = out.graph;
  g.node.resize(n);
  out.compute.resize(n);
  std::unordered_map<std::string, std::vector<double>> nodes, edges, computes;
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
    if (fresh)
      for (size_t cu = 0; cu < cu_n; ++cu) {
        const Model::OpEstimate e = md.detail(u, cu);
        // A candidate whose own blocks on one rank, beside the held inputs, pass the memory per
        // rank is out whatever the others do: the limit's penalty, as cost_of charges it.
        const double mine = double((e.blocks + md.m.ranks - 1) / md.m.ranks) * e.block_bytes + md.held_peak;
        nit->second.push_back(e.time + (mine > md.m.mem_bytes_per_rank ? kOverMemory : 0.0));
        comp.push_back(e.compute);
      }
    g.node[u] = nit->second;
    out.compute[u] = comp;
    std::vector<Model::OpEstimate> base;  // with the edges' samples
    for (int p : producers) {
      std::string ekey = key + "<-" + key_of(md, static_cast<size_t>(p), opt);
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = from[j], ekey += cat_str(",", j);
      auto [eit, new_edge] = edges.try_emplace(ekey);
      if (new_edge) {
        if (base.empty()) {
          std::vector<Source> moved = md.in[u];
          for (size_t j = 0; j < from.size(); ++j)
            if (from[j].op >= 0) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
          for (size_t cu = 0; cu < cu_n; ++cu) base.push_back(md.detail(u, cu, kLookaheadSamples));
          md.in[u] = moved;
        }
        const Source& first =
            from[std::find_if(from.begin(), from.end(), [&](const Source& s) { return s.op == p; }) -
                 from.begin()];
        for (size_t cp = 0; cp < md.cands[p].size(); ++cp) {
          md.pick[p] = static_cast<int>(cp);
          const double holders = holders_of(md, first, md.cands[p][cp], md.sigs[p]);
          for (size_t cu = 0; cu < cu_n; ++cu) {
            const Model::OpEstimate e = md.detail(u, cu, kLookaheadSamples);
            // The receivers' side, or the senders' when the holders of p's output each send
            // more than a receiver gets (the estimate prices a sender's messages, not its bytes).
            const double sent = (e.moved - base[cu].moved) / holders / md.link.bandwidth;
            eit->second.push_back(std::max(e.time - base[cu].time, sent));
          }
        }
        md.pick[p] = 0;
      }
      g.edges.push_back(CostGraph::Edge{p, static_cast<int>(u), eit->second});
      for (size_t j = 0; j < from.size(); ++j)
        if (from[j].op == p) md.in[u][j] = everywhere(md, md.sigs[u].inputs[j].shape.size());
    }
    md.in[u] = from;
  }
  md.pick = saved;
  return out;
}

}  // namespace

GlobalStart global_start(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                         const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt) {
  Model md(m);
  build_model(md, topo, initial, roots, opt);
  GlobalStart s{pairwise(md, opt).graph, {}};
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
    md.pick = solve(tables.graph).pick;
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
        tables.graph, best, best_cost, cost, [&] { return evaluations <= opt.steps; }, kPatience);
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
