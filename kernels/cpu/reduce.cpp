// run_reduce: Sum Prod Max Min All Any over any set of dims of a strided input, with the monoids
// of kernels/monoid.hpp; combine_into merges partial results with the same monoids.
//
// The dims are sorted by input stride and coalesced, then one of two loops runs:
//  - inner-reduced (the densest dim is reduced): each output folds runs of the input
//    into 16 independent lanes (a vectorizable loop, and more accurate than one chain);
//  - outer-reduced (the densest dim is kept): a block of outputs is accumulated as a
//    vector, one input row at a time.
// Work is split over outputs when there are enough; otherwise one reduced dim is cut
// into a fixed number of chunks whose partial results are combined in order, so the
// result does not depend on the number of threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "engine/ir/error.hpp"
#include "kernels/cpu/avx2_lanes.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/functors.hpp"
#include "kernels/monoid.hpp"

namespace tapestry::cpu {
namespace {

// ---- Loops. ----

// f(TypeTag<T>) for the element types monoid M reduces: the real compute types, and c64 and c128
// for sum and prod (the builders refuse complex max and min, and cast f16 and bf16 to f32).
template <Monoid M, class F> void dispatch_reduce_dtype(DType t, F&& f) {
  if constexpr (M == Monoid::Sum || M == Monoid::Prod) {
    if (is_complex(t)) return dispatch_complex(t, std::forward<F>(f));
  }
  dispatch_dtype(t, std::forward<F>(f));
}

struct RDim {
  int64_t n, sin, sout;  // extent, input stride, output stride (0 when reduced)
  bool red;
};

constexpr int kLanes = 16;
constexpr int64_t kAheadBytes = 16 << 10;  // fold_run's software prefetch distance
constexpr int64_t kAheadRows = 4;          // the outer-reduced loop's, in rows
constexpr int64_t kBlock = 512;            // outputs accumulated together (outer-reduced)
constexpr int64_t kSerialWork = 1 << 15;   // inputs below which one thread reduces
constexpr int64_t kChunkWork = 1 << 14;    // least inputs per partial chunk
constexpr int64_t kMaxChunks = 64;
// Fewer tasks than this (outputs, or blocks of them) cut the reduction instead; a
// constant, not the thread count, so that results do not depend on TAPESTRY_THREADS.
constexpr int64_t kSplitBelow = 32;

// Max and min of f32 and f64, kLanes contiguous elements at a time, lane j folding elements j
// mod kLanes in order: fn::combine's select as AVX2 compares and blends (the scalar select
// compiled to a compare and a cmov per element: 6 GB/s on one thread, and GCC's generic
// vectors of 16 lanes went through memory). The same lanes and order as the scalar loop, so
// the same result bit for bit. False without AVX2: the caller's loop runs.
template <bool Max, class T> bool fold_lanes_extreme(T* lanes, const T* p, int64_t& i, int64_t n) {
#if defined(__AVX2__)
  using L = Lanes<T>;
  constexpr int kRegs = kLanes / L::kN;  // 2 for f32, 4 for f64
  const char* ahead = reinterpret_cast<const char*>(p) + kAheadBytes;
  typename L::V acc[kRegs];
  for (int r = 0; r < kRegs; ++r) acc[r] = L::load(lanes + L::kN * r);
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t b = 0; b < kLanes * sizeof(T); b += 64) __builtin_prefetch(ahead + i * sizeof(T) + b);
    for (int r = 0; r < kRegs; ++r) {
      const typename L::V x = L::load(p + i + L::kN * r);
      const typename L::V beyond = Max ? L::gt(acc[r], x) : L::lt(acc[r], x);
      acc[r] = L::select(L::bor(beyond, L::unord(acc[r], acc[r])), acc[r], x);
    }
  }
  for (int r = 0; r < kRegs; ++r) L::store(lanes + L::kN * r, acc[r]);
  return true;
#else
  (void)lanes, (void)p, (void)i, (void)n;
  return false;
#endif
}

// The contiguous lanes of fold_run where a plain loop is slow, from element i on (i advances
// past the last whole group of kLanes); false where fold_run's own loop serves. Measured on
// 256 MiB against a plain read loop (docs/performance.md, session 38):
//  - sums and products of floats prefetch kAheadBytes ahead, as run_moments does
//    (vector_kernels.cpp): without it a sum read at ~60% of the loop's speed (9.6 GB/s on one
//    thread, 14-17 on two; with it ~90%). Past the end a prefetch does not fault.
//  - max and min of floats: fold_lanes_extreme (~20% of the loop's speed before).
template <class R, class T>
bool fold_lanes_contiguous(typename R::A* lanes, const T* p, int64_t& i, int64_t n) {
  using A = typename R::A;
  constexpr Monoid M = R::kMonoid;
  if constexpr ((M == Monoid::Max || M == Monoid::Min) && std::is_same_v<A, T> &&
                std::is_floating_point_v<T>) {
    return fold_lanes_extreme<M == Monoid::Max>(lanes, p, i, n);
  } else if constexpr ((M == Monoid::Sum || M == Monoid::Prod) && std::is_floating_point_v<T>) {
    const char* ahead = reinterpret_cast<const char*>(p) + kAheadBytes;
    for (; i + kLanes <= n; i += kLanes) {
      for (size_t b = 0; b < kLanes * sizeof(T); b += 64) __builtin_prefetch(ahead + i * sizeof(T) + b);
      for (int j = 0; j < kLanes; ++j) lanes[j] = R::step(lanes[j], p[i + j]);
    }
    return true;
  } else {
    (void)lanes, (void)p, (void)i, (void)n;
    return false;
  }
}

// The lanes joined pairwise, lanes[j] with lanes[j + w] for w = 8, 4, 2, 1: lanes[0] is their
// fold. Max and min of f32 and f64 as AVX2 compares and blends (a level whose pairs are closer
// than a register reads the register at lanes + w; the lanes past w it writes are not read
// again): the same selects as combine's, whose branches mispredict on data (x:max(2) of rows
// of 32 elements spent most of its time here). The same result bit for bit.
template <class R> typename R::A join_lanes(typename R::A* lanes) {
  using A = typename R::A;
#if defined(__AVX2__)
  constexpr Monoid M = R::kMonoid;
  if constexpr ((M == Monoid::Max || M == Monoid::Min) &&
                (std::is_same_v<A, float> || std::is_same_v<A, double>)) {
    using L = Lanes<A>;
    for (int w = kLanes / 2; w >= 1; w /= 2) {
      for (int r = 0; r < std::max(1, w / L::kN); ++r) {
        const typename L::V a = L::load(lanes + r * L::kN), b = L::load(lanes + w + r * L::kN);
        const typename L::V keep = M == Monoid::Max ? L::gt(a, b) : L::lt(a, b);
        L::store(lanes + r * L::kN, L::select(L::bor(keep, L::unord(a, a)), a, b));
      }
    }
    return lanes[0];
  }
#endif
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] = R::join(lanes[j], lanes[j + w]);
  return lanes[0];
}

// Folds n elements at stride s.
template <class R, class T> typename R::A fold_run(const T* p, int64_t n, int64_t s) {
  using A = typename R::A;
  A acc = R::init();
  int64_t i = 0;
  if (n >= 2 * kLanes) {
    A lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = R::init();
    if (s == 1) {
      if (!fold_lanes_contiguous<R>(lanes, p, i, n))
        for (; i + kLanes <= n; i += kLanes)
          for (int j = 0; j < kLanes; ++j) lanes[j] = R::step(lanes[j], p[i + j]);
    } else {
      for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) lanes[j] = R::step(lanes[j], p[(i + j) * s]);
    }
    acc = join_lanes<R>(lanes);
  }
  for (; i < n; ++i) acc = R::step(acc, p[i * s]);
  return acc;
}

// An odometer over `dims` (possibly none) reading one stride per dim.
std::vector<Dim<2>> as_dims(const std::vector<RDim>& ds) {
  std::vector<Dim<2>> out;
  for (const RDim& d : ds) out.push_back(Dim<2>{d.n, {d.sin, d.sout}});
  if (out.empty()) out.push_back(Dim<2>{1, {0, 0}});
  return out;
}

template <class R, class T, class O> class Reducer {
 public:
  using A = typename R::A;

  // dims: sorted by input stride (densest last) and coalesced.
  static void run(const T* in, O* out, std::vector<RDim> dims, bool may_split) {
    std::vector<RDim> kept, red;
    for (const RDim& d : dims) (d.red ? red : kept).push_back(d);
    int64_t nout = 1, total = 1;
    for (const RDim& d : kept) nout *= d.n;
    for (const RDim& d : dims) total *= d.n;
    const bool inner_red = !red.empty() && dims.back().red;
    int64_t nblocks = 1, ntasks = nout;
    if (!inner_red) {
      nblocks = (kept.back().n + kBlock - 1) / kBlock;
      ntasks = nout / kept.back().n * nblocks;
    }
    if (may_split && total >= kSerialWork && ntasks < kSplitBelow && !red.empty()) {
      split(in, out, dims, kept, nout, total);
      return;
    }
    const int64_t grain =
        total < kSerialWork ? ntasks : grain_for(ntasks, std::max<int64_t>(1, kSerialWork * ntasks / total));
    if (inner_red) {
      const RDim inner = red.back();
      red.pop_back();
      const auto kd = as_dims(kept), rd = as_dims(red);
      const int64_t nr = total / nout / inner.n;
      parallel_for(ntasks, grain, [&](int64_t lo, int64_t hi, int) {
        if (nr == 1 && kd.size() == 1 && inner.sin == 1 && inner.n < 2 * kLanes) {
          fold_short_rows(in, out, kd[0].s[0], kd[0].s[1], inner.n, lo, hi);
          return;
        }
        Odometer<2> k(kd, lo);
        if (nr == 1) {  // only the densest dim reduced: no odometer (an allocation) per output
          for (int64_t o = lo; o < hi; ++o, k.advance(1))
            out[k.off[1]] =
                static_cast<O>(R::join(R::init(), fold_run<R>(in + k.off[0], inner.n, inner.sin)));
          return;
        }
        for (int64_t o = lo; o < hi; ++o, k.advance(1)) {
          A acc = R::init();
          Odometer<2> r(rd, 0);
          for (int64_t ri = 0; ri < nr; ++ri, r.advance(1))
            acc = R::join(acc, fold_run<R>(in + k.off[0] + r.off[0], inner.n, inner.sin));
          out[k.off[1]] = static_cast<O>(acc);
        }
      });
    } else {
      const RDim last = kept.back();
      kept.pop_back();
      const auto kd = as_dims(kept), rd = as_dims(red);
      const int64_t nred = total / nout;
      parallel_for(ntasks, grain, [&](int64_t lo, int64_t hi, int) {
        A acc[kBlock];
        Odometer<2> k(kd, lo / nblocks);
        for (int64_t t = lo; t < hi; ++t) {
          if (t != lo && t % nblocks == 0) k.advance(1);
          const int64_t j0 = (t % nblocks) * kBlock, b = std::min(kBlock, last.n - j0);
          for (int64_t j = 0; j < b; ++j) acc[j] = R::init();
          const T* base = in + k.off[0] + j0 * last.sin;
          Odometer<2> r(rd, 0);
          // One reduced dim (a column sum): its rows a fixed stride apart, the block of a row
          // kAheadRows rows on prefetched (the hardware prefetcher does not follow short runs
          // a row apart).
          const int64_t ahead = rd.size() == 1 && last.sin == 1 ? kAheadRows * rd[0].s[0] : 0;
          for (int64_t ri = 0; ri < nred; ++ri, r.advance(1)) {
            const T* p = base + r.off[0];
            if (last.sin == 1) {
              if (ahead != 0 && ri + kAheadRows < nred)
                for (int64_t j = 0; j < b; j += 64 / static_cast<int64_t>(sizeof(T)))
                  __builtin_prefetch(p + ahead + j);
              for (int64_t j = 0; j < b; ++j) acc[j] = R::step(acc[j], p[j]);
            } else {
              for (int64_t j = 0; j < b; ++j) acc[j] = R::step(acc[j], p[j * last.sin]);
            }
          }
          O* o = out + k.off[1] + j0 * last.sout;
          for (int64_t j = 0; j < b; ++j) o[j * last.sout] = static_cast<O>(acc[j]);
        }
      });
    }
  }

 private:
  // Outputs lo .. hi-1 of short contiguous rows (fewer than 2 * kLanes elements, which
  // fold_run folds in one chain), row o at in + o * sin, its output at out + o * sout. Rows
  // are folded kRowGroup at a time, element by element across the group: the chains are
  // independent, so the adds overlap instead of each waiting for the last (x:sum(2) of
  // 2^23 rows of 8 waited ~4 cycles an element, ~3.5 times a read pass). Each row's fold is
  // still init, then its elements in order: the same result bit for bit.
  static void fold_short_rows(const T* in, O* out, int64_t sin, int64_t sout, int64_t n, int64_t lo,
                              int64_t hi) {
    constexpr int64_t kRowGroup = 8;
    const bool dense = sin == n;  // the group's rows are one run: read ahead of it
    const int64_t group_bytes = kRowGroup * n * static_cast<int64_t>(sizeof(T));
    int64_t o = lo;
    for (; o + kRowGroup <= hi; o += kRowGroup) {
      A acc[kRowGroup];
      for (int64_t g = 0; g < kRowGroup; ++g) acc[g] = R::init();
      const T* p = in + o * sin;
      if (dense)
        for (int64_t b = 0; b < group_bytes; b += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(p) + kAheadBytes + b);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t g = 0; g < kRowGroup; ++g) acc[g] = R::step(acc[g], p[g * sin + i]);
      for (int64_t g = 0; g < kRowGroup; ++g)
        out[(o + g) * sout] = static_cast<O>(R::join(R::init(), acc[g]));
    }
    for (; o < hi; ++o) out[o * sout] = static_cast<O>(R::join(R::init(), fold_run<R>(in + o * sin, n, 1)));
  }

  // Too few outputs to share out: cut the longest reduced dim into chunks, reduce each
  // into a partial result (a new kept dim), then fold the partials in chunk order.
  static void split(const T* in, O* out, const std::vector<RDim>& dims, const std::vector<RDim>& kept,
                    int64_t nout, int64_t total) {
    size_t di = 0;
    int64_t best = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      // The densest dim is cut only if nothing else is long: its runs feed the lanes.
      int64_t score = dims[i].red ? dims[i].n * (i + 1 == dims.size() ? 1 : 8) : 0;
      if (score > best) best = score, di = i;
    }
    const RDim d = dims[di];
    int64_t chunks = std::min({d.n, kMaxChunks, std::max<int64_t>(1, total / kChunkWork)});
    const int64_t len = (d.n + chunks - 1) / chunks;
    const int64_t full = d.n / len, rest = d.n - full * len;
    const int64_t nparts = full + (rest > 0);
    std::unique_ptr<A[]> part(new A[nparts * nout]);  // not vector: A may be bool
    // Partial results are laid out [chunk][kept dims, row-major in `dims` order].
    std::vector<RDim> pd = dims;
    int64_t ps = 1;
    for (size_t i = pd.size(); i-- > 0;)
      if (!pd[i].red) pd[i].sout = ps, ps *= pd[i].n;
    std::vector<RDim> main = pd;
    main[di] = RDim{len, d.sin, 0, true};
    main.insert(main.begin() + di, RDim{full, d.sin * len, nout, false});
    Reducer<R, T, A>::run(in, part.get(), main, false);
    if (rest > 0) {
      std::vector<RDim> tail = pd;
      tail[di] = RDim{rest, d.sin, 0, true};
      Reducer<R, T, A>::run(in + full * len * d.sin, part.get() + full * nout, tail, false);
    }
    std::vector<RDim> kp;
    for (const RDim& x : pd)
      if (!x.red) kp.push_back(x);
    const auto kd = as_dims(kept), kpd = as_dims(kp);
    Odometer<2> k(kd, 0), q(kpd, 0);
    for (int64_t o = 0; o < nout; ++o, k.advance(1), q.advance(1)) {
      A acc = part[q.off[1]];
      for (int64_t c = 1; c < nparts; ++c) acc = R::join(acc, part[c * nout + q.off[1]]);
      out[k.off[1]] = static_cast<O>(acc);
    }
  }
};

// Sorts dims by input stride, densest last (a stable sort keeps row-major order among
// equals), and merges neighbours that are one run for both input and output.
std::vector<RDim> normalize(std::vector<RDim> dims) {
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const RDim& d) { return d.n == 1; }), dims.end());
  std::stable_sort(dims.begin(), dims.end(),
                   [](const RDim& a, const RDim& b) { return std::abs(a.sin) > std::abs(b.sin); });
  std::vector<RDim> out;
  for (const RDim& d : dims) {
    if (!out.empty()) {
      RDim& p = out.back();
      if (p.red == d.red && p.sin == d.sin * d.n && p.sout == d.sout * d.n) {
        p.n *= d.n;
        p.sin = d.sin;
        p.sout = d.sout;
        continue;
      }
    }
    out.push_back(d);
  }
  if (out.empty()) out.push_back(RDim{1, 0, 0, false});
  return out;
}

template <Monoid M, class T>
void reduce_typed(const View& in, const std::vector<RDim>& dims, const View& out) {
  using R = fn::Fold<M, T>;
  using A = typename R::A;
  const T* src = in.ptr<T>();
  const int64_t nout = out.numel();
  if (in.numel() == 0) {  // an empty reduction gives the identity
    dispatch_any_dtype(out.dtype, [&](auto tag) {
      using O = typename decltype(tag)::type;
      View o = out;
      auto od = coalesce<1>(o.shape, {&o.strides});
      Odometer<1> it(od, 0);
      for (int64_t i = 0; i < nout; ++i, it.advance(1)) o.ptr<O>()[it.off[0]] = fn::Cast<A, O>{}(R::init());
    });
    return;
  }
  if (out.dtype == dtype_of<A>()) {
    Reducer<R, T, A>::run(src, out.ptr<A>(), dims, true);
  } else if (out.dtype == dtype_of<T>()) {
    Reducer<R, T, T>::run(src, out.ptr<T>(), dims, true);
  } else {
    // Any other output dtype: reduce into an accumulator laid out like `out`, then
    // convert (outputs are contiguous, so the layout is the flat index).
    internal_check(out.is_contiguous());
    std::unique_ptr<A[]> tmp(new A[nout]);
    Reducer<R, T, A>::run(src, tmp.get(), dims, true);
    dispatch_any_dtype(out.dtype, [&](auto tag) {
      using O = typename decltype(tag)::type;
      O* o = out.ptr<O>();
      for (int64_t i = 0; i < nout; ++i) o[i] = fn::Cast<A, O>{}(tmp[i]);
    });
  }
}

// One result into element i of out (contiguous) from its accumulator: as it is, or converted,
// as reduce_typed stores it.
template <class T, class A> void store_at(A acc, const View& out, int64_t i) {
  if (out.dtype == dtype_of<A>()) {
    out.ptr<A>()[i] = acc;
  } else if (out.dtype == dtype_of<T>()) {
    out.ptr<T>()[i] = static_cast<T>(acc);
  } else {
    dispatch_any_dtype(out.dtype, [&](auto tag) {
      using O = typename decltype(tag)::type;
      out.ptr<O>()[i] = fn::Cast<A, O>{}(acc);
    });
  }
}

template <class T, class A> void store_one(A acc, const View& out) { store_at<T>(acc, out, 0); }

// Every element of a contiguous input into one output, below the size Reducer::run would
// split: the one fold it would do (join(init, fold_run)), without building its dims. A dot
// product observed in a loop of small observations takes this path.
template <Monoid M, class T> void fold_all(const View& in, const View& out) {
  using R = fn::Fold<M, T>;
  store_one<T>(R::join(R::init(), fold_run<R>(in.ptr<T>(), in.numel(), 1)), out);
}

// Tiles folded together by one task of fold_tiles: 64K elements, 256 KiB of f32.
constexpr int64_t kFoldChunkTiles = 128;

// Whole groups of kLanes of a tile into the lanes, from element i on (i advances past them):
// the lanes and order of fold_run, without its read-ahead (a tile is in L1).
template <class R, class T> void fold_tile_lanes(typename R::A* lanes, const T* p, int64_t& i, int64_t m) {
  constexpr Monoid M = R::kMonoid;
  if constexpr ((M == Monoid::Max || M == Monoid::Min) && std::is_same_v<typename R::A, T> &&
                std::is_floating_point_v<T>) {
    if (fold_lanes_extreme<M == Monoid::Max>(lanes, p, i, m)) return;
  }
  for (; i + kLanes <= m; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = R::step(lanes[j], p[i + j]);
}

template <Monoid M, class T>
void fold_tiles_typed(int64_t n, int64_t tile_elems, const TileSource& tile, const View& out) {
  using R = fn::Fold<M, T>;
  using A = typename R::A;
  internal_check(n > 0 && tile_elems > 0 && tile_elems % kLanes == 0);
  const int64_t ntiles = (n + tile_elems - 1) / tile_elems;
  const int64_t nchunks = (ntiles + kFoldChunkTiles - 1) / kFoldChunkTiles;
  std::unique_ptr<A[]> part(new A[nchunks]);  // not vector: A may be bool
  parallel_for(nchunks, 1, [&](int64_t lo, int64_t hi, int worker) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t t0 = c * kFoldChunkTiles, t1 = std::min(ntiles, t0 + kFoldChunkTiles);
      const int64_t count = std::min(n, t1 * tile_elems) - t0 * tile_elems;
      A acc = R::init();
      if (count < 2 * kLanes) {  // one chain, as fold_run folds a short run
        for (int64_t t = t0; t < t1; ++t) {
          const T* p = static_cast<const T*>(tile(t, worker));
          const int64_t m = std::min(tile_elems, n - t * tile_elems);
          for (int64_t i = 0; i < m; ++i) acc = R::step(acc, p[i]);
        }
      } else {
        A lanes[kLanes];
        for (int j = 0; j < kLanes; ++j) lanes[j] = R::init();
        const T* tail = nullptr;  // only the last tile has elements past its groups of kLanes
        int64_t tail_n = 0;
        for (int64_t t = t0; t < t1; ++t) {
          const T* p = static_cast<const T*>(tile(t, worker));
          const int64_t m = std::min(tile_elems, n - t * tile_elems);
          int64_t i = 0;
          fold_tile_lanes<R>(lanes, p, i, m);
          tail = p + i;
          tail_n = m - i;
        }
        acc = join_lanes<R>(lanes);
        for (int64_t i = 0; i < tail_n; ++i) acc = R::step(acc, tail[i]);
      }
      part[c] = R::join(R::init(), acc);
    }
  });
  A total = part[0];
  for (int64_t c = 1; c < nchunks; ++c) total = R::join(total, part[c]);
  store_one<T>(total, out);
}

// One row's fold as its elements arrive, in pieces: the order of Reducer's for a contiguous row
// of n elements (fold_run's 16 lanes over its whole groups, then the tail; one chain below
// 2 * kLanes elements), so the same result bit for bit.
template <class R, class T> class RowFold {
 public:
  using A = typename R::A;
  explicit RowFold(int64_t n) : n_(n), grouped_(n >= 2 * kLanes ? n / kLanes * kLanes : 0) { restart(); }

  void restart() {
    at_ = 0;
    acc_ = R::init();
    for (int j = 0; j < kLanes; ++j) lanes_[j] = R::init();
  }
  int64_t left() const { return n_ - at_; }

  // The next k elements of the row (k <= left()).
  void feed(const T* p, int64_t k) {
    int64_t i = 0;
    while (i < k && at_ < grouped_) {
      if (at_ % kLanes == 0 && k - i >= kLanes) {  // whole groups straight into the lanes
        const int64_t end = std::min(k, i + (grouped_ - at_));
        const int64_t before = i;
        fold_tile_lanes<R>(lanes_, p, i, end);
        at_ += i - before;
        continue;
      }
      lanes_[at_ % kLanes] = R::step(lanes_[at_ % kLanes], p[i]);
      ++i;
      ++at_;
    }
    if (i < k && at_ == grouped_ && grouped_ > 0 && !joined_) close_lanes();
    for (; i < k; ++i, ++at_) acc_ = R::step(acc_, p[i]);
  }

  // The row's result, once every element was fed.
  A result() {
    if (grouped_ > 0 && !joined_) close_lanes();
    joined_ = false;
    return R::join(R::init(), acc_);
  }

 private:
  void close_lanes() {
    acc_ = join_lanes<R>(lanes_);
    joined_ = true;
  }

  int64_t n_, grouped_, at_ = 0;
  bool joined_ = false;
  A acc_;
  A lanes_[kLanes];
};

template <Monoid M, class T>
void fold_rows_typed(int64_t nrows, int64_t row, int64_t tile_elems, const TileSource& tile,
                     const View& out) {
  using R = fn::Fold<M, T>;
  using A = typename R::A;
  constexpr int64_t kRowGroup = 8;  // short rows folded together, as Reducer::fold_short_rows
  const int64_t n = nrows * row;
  // Tasks of whole rows, about a fold_tiles chunk each; a tile shared by two tasks is computed
  // by both, each folding its own rows of it.
  const int64_t rows_per_task = std::max<int64_t>(1, kFoldChunkTiles * tile_elems / row);
  const int64_t ntasks = (nrows + rows_per_task - 1) / rows_per_task;
  parallel_for(ntasks, 1, [&](int64_t lo, int64_t hi, int worker) {
    RowFold<R, T> f(row);
    for (int64_t c = lo; c < hi; ++c) {
      int64_t r = c * rows_per_task;
      const int64_t r_end = std::min(nrows, r + rows_per_task);
      int64_t e = r * row;
      const int64_t e_end = r_end * row;
      while (e < e_end) {
        const int64_t t = e / tile_elems;
        const T* p = static_cast<const T*>(tile(t, worker));
        const int64_t t0 = t * tile_elems, t1 = std::min({n, t0 + tile_elems, e_end});
        while (e < t1) {
          const T* q = p + (e - t0);
          if (f.left() == row && row < 2 * kLanes && t1 - e >= kRowGroup * row) {
            // kRowGroup whole short rows in this tile: their chains side by side.
            A acc[kRowGroup];
            for (int64_t g = 0; g < kRowGroup; ++g) acc[g] = R::init();
            for (int64_t i = 0; i < row; ++i)
              for (int64_t g = 0; g < kRowGroup; ++g) acc[g] = R::step(acc[g], q[g * row + i]);
            for (int64_t g = 0; g < kRowGroup; ++g) store_at<T>(R::join(R::init(), acc[g]), out, r + g);
            r += kRowGroup;
            e += kRowGroup * row;
            continue;
          }
          if (f.left() == row && t1 - e >= row) {  // a whole row in this tile: run_reduce's fold of it
            store_at<T>(R::join(R::init(), fold_run<R>(q, row, 1)), out, r++);
            e += row;
            continue;
          }
          const int64_t k = std::min(f.left(), t1 - e);  // a row across tiles, a piece at a time
          f.feed(q, k);
          e += k;
          if (f.left() == 0) {
            store_at<T>(f.result(), out, r++);
            f.restart();
          }
        }
      }
    }
  });
}

template <Monoid M> void reduce_monoid(const View& in, const std::vector<int>& dims, const View& out) {
  // Small and whole: no dims to build (fold_all).
  if (out.numel() == 1 && in.numel() > 0 && in.numel() < kSerialWork && in.is_contiguous()) {
    dispatch_reduce_dtype<M>(in.dtype, [&](auto tag) { fold_all<M, typename decltype(tag)::type>(in, out); });
    return;
  }
  std::vector<bool> red(in.rank(), false);
  for (int d : dims) {
    internal_check(d >= 0 && d < in.rank() && !red[d]);
    red[d] = true;
  }
  internal_check(out.rank() == in.rank() - static_cast<int>(dims.size()));
  std::vector<RDim> rd;
  for (int d = 0, k = 0; d < in.rank(); ++d) {
    if (red[d]) {
      rd.push_back(RDim{in.shape[d], in.strides[d], 0, true});
    } else {
      internal_check(out.shape[k] == in.shape[d]);
      rd.push_back(RDim{in.shape[d], in.strides[d], out.strides[k], false});
      ++k;
    }
  }
  if (out.numel() == 0) return;
  const std::vector<RDim> nd = in.numel() == 0 ? rd : normalize(rd);
  dispatch_reduce_dtype<M>(in.dtype,
                           [&](auto tag) { reduce_typed<M, typename decltype(tag)::type>(in, nd, out); });
}

}  // namespace

void run_reduce(Op op, const View& in, const std::vector<int>& dims, const View& out) {
  internal_check(out.rank() == in.rank() - static_cast<int>(dims.size()));
  const std::optional<Monoid> m = monoid_of(op);
  internal_check(m.has_value() && "run_reduce: not a Reduce op");
  dispatch_monoid(*m, [&](auto mc) { reduce_monoid<decltype(mc)::value>(in, dims, out); });
}

void fold_tiles(Op op, DType in, int64_t n, int64_t tile_elems, const TileSource& tile, const View& out) {
  internal_check(out.numel() == 1);
  const std::optional<Monoid> m = monoid_of(op);
  internal_check(m.has_value() && "fold_tiles: not a Reduce op");
  dispatch_monoid(*m, [&](auto mc) {
    constexpr Monoid M = decltype(mc)::value;
    dispatch_reduce_dtype<M>(
        in, [&](auto tag) { fold_tiles_typed<M, typename decltype(tag)::type>(n, tile_elems, tile, out); });
  });
}

void fold_rows(Op op, DType in, int64_t nrows, int64_t row, int64_t tile_elems, const TileSource& tile,
               const View& out) {
  internal_check(out.numel() == nrows && out.is_contiguous() && nrows > 0 && row > 0 && tile_elems > 0);
  const std::optional<Monoid> m = monoid_of(op);
  internal_check(m.has_value() && "fold_rows: not a Reduce op");
  dispatch_monoid(*m, [&](auto mc) {
    constexpr Monoid M = decltype(mc)::value;
    dispatch_reduce_dtype<M>(in, [&](auto tag) {
      fold_rows_typed<M, typename decltype(tag)::type>(nrows, row, tile_elems, tile, out);
    });
  });
}

void combine_into(Monoid m, const View& acc, const View& part) {
  internal_check(acc.shape == part.shape && acc.dtype == part.dtype);
  if (acc.numel() == 0) return;
  dispatch_monoid(m, [&](auto mc) {
    dispatch_reduce_dtype<decltype(mc)::value>(acc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      constexpr Monoid M = decltype(mc)::value;
      const auto dims = coalesce<2>(acc.shape, {&acc.strides, &part.strides});
      Odometer<2> it(dims, 0);
      for (int64_t left = acc.numel(); left > 0;) {
        const int64_t run = it.run_left(), sa = it.inner_stride(0), sp = it.inner_stride(1);
        T* a = acc.ptr<T>() + it.off[0];
        const T* p = part.ptr<T>() + it.off[1];
        if (sa == 1 && sp == 1) {  // the usual case, vectorized
          for (int64_t e = 0; e < run; ++e) a[e] = fn::combine<M>(a[e], p[e]);
        } else {
          for (int64_t e = 0; e < run; ++e) a[e * sa] = fn::combine<M>(a[e * sa], p[e * sp]);
        }
        left -= run;
        if (left > 0) it.advance(run);
      }
    });
  });
}

void fill_identity(Monoid m, const View& v) {
  internal_check(v.is_contiguous());
  dispatch_monoid(m, [&](auto mc) {
    dispatch_reduce_dtype<decltype(mc)::value>(v.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill_n(v.ptr<T>(), v.numel(), fn::identity<decltype(mc)::value, T>());
    });
  });
}

}  // namespace tapestry::cpu
