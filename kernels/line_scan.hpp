// The scans of run_line (cumsum, cumprod, logcumsumexp, cummax, cummin) cut into chunks joined by
// carries, one chunk a thread: the CUDA kernels (kernels/cuda/line.cu) run these functions per
// thread, and the CPU tests run them in loops against cpu::run_line, so the GPU's arithmetic is
// tested where there is no GPU. Three passes over a line cut into `chunks` pieces of `len`:
//   1. total(c):   the state after chunk c alone             (every chunk but the last)
//   2. carries(l): each chunk's carry, the join of the totals before it, in order (one a line)
//   3. scan(c):    chunk c's outputs, stepping from its carry (chunk 0 from its first element)
// With one chunk a line only pass 3 runs, in the CPU's exact order (bitwise its results). With
// several, integer scans and cummax/cummin are still exact (their joins are associative); float
// sums and products round as a split line does on several ranks.
#pragma once

#include <cstdint>

#include "kernels/hd.hpp"
#include "kernels/scan.hpp"

namespace tapestry::scan {

// The state, first element, step and join of each scan; put writes the state as the output.
template <Op op, class T> struct ScanOf {  // Cumsum, Cumprod: the element type, wrapping ints
  using State = T;
  TP_HD State first(T x, int64_t) const { return x; }
  TP_HD State step(State acc, T x, int64_t) const { return ScanStep<op>{}(acc, x); }
  TP_HD State join(State a, State b) const { return ScanStep<op>{}(a, b); }
  TP_HD void put(void* out, int64_t at, State s) const { static_cast<T*>(out)[at] = s; }
};
template <class T> struct ScanOf<Op::Logcumsumexp, T> {  // in f64, as the CPU
  using State = double;
  TP_HD State first(T x, int64_t) const { return static_cast<double>(x); }
  TP_HD State step(State acc, T x, int64_t) const { return join(acc, static_cast<double>(x)); }
  TP_HD State join(State a, State b) const { return ScanStep<Op::Logcumsumexp>{}(a, b); }
  TP_HD void put(void* out, int64_t at, State s) const { static_cast<T*>(out)[at] = static_cast<T>(s); }
};
template <bool Max, class T> struct ExtremeScan {  // cummax, cummin: values or 1-based indices
  using State = Extreme<T>;
  bool indices = false;
  TP_HD State first(T x, int64_t i) const { return State{x, i}; }
  TP_HD State step(State acc, T x, int64_t i) const { return extreme_step<Max>(acc, x, i); }
  TP_HD State join(State a, State b) const { return extreme_join<Max>(a, b); }
  TP_HD void put(void* out, int64_t at, State s) const {
    if (indices) static_cast<int64_t*>(out)[at] = s.at + 1;
    else static_cast<T*>(out)[at] = s.v;
  }
};
template <class T> struct ScanOf<Op::Cummax, T> : ExtremeScan<true, T> {};
template <class T> struct ScanOf<Op::Cummin, T> : ExtremeScan<false, T> {};

// Lines of a contiguous input cut into chunks; i counts in scan order (from the end when reverse).
struct ChunkedLines {
  Lines lines;
  bool reverse = false;
  int64_t chunks = 1, len = 1;  // chunks a line, elements a chunk (the last may be shorter)
  TP_HD int64_t pos(int64_t line, int64_t i) const {
    return lines.start(line) + (reverse ? lines.n - 1 - i : i) * lines.inner;
  }
  TP_HD int64_t threads() const {
    return lines.count() * chunks;
  }  // thread t: chunk t / count, line t % count
};

// Enough chunks for about `threads` threads in all, none shorter than `min_len` elements (a short
// chunk's carry costs more than scanning it); one chunk when the lines alone are that many.
inline ChunkedLines chunk_lines(const Lines& L, bool reverse, int64_t threads, int64_t min_len = 64) {
  ChunkedLines C{L, reverse, 1, L.n < 1 ? 1 : L.n};
  const int64_t want = (threads + L.count() - 1) / L.count();
  const int64_t most = (L.n + min_len - 1) / min_len;
  const int64_t chunks = want < most ? want : most;
  if (chunks > 1) {
    C.len = (L.n + chunks - 1) / chunks;
    C.chunks = (L.n + C.len - 1) / C.len;
  }
  return C;
}

// Pass 1: the state after chunk c of `line` alone.
template <class Scan, class T>
TP_HD typename Scan::State chunk_total(const Scan& s, const T* x, const ChunkedLines& C, int64_t line,
                                       int64_t c) {
  const int64_t i0 = c * C.len, i1 = i0 + C.len < C.lines.n ? i0 + C.len : C.lines.n;
  typename Scan::State acc = s.first(x[C.pos(line, i0)], i0);
  for (int64_t i = i0 + 1; i < i1; ++i) acc = s.step(acc, x[C.pos(line, i)], i);
  return acc;
}

// Pass 2: agg[c * count + line] holds chunk c's total (c < chunks - 1); afterwards chunk c >= 1's
// carry.
template <class Scan>
TP_HD void chunk_carries(const Scan& s, typename Scan::State* agg, const ChunkedLines& C, int64_t line) {
  const int64_t count = C.lines.count();
  typename Scan::State run = agg[line];
  for (int64_t c = 1; c < C.chunks; ++c) {
    typename Scan::State* at = agg + c * count + line;
    if (c + 1 == C.chunks) {  // the last chunk's total is never computed: no chunk follows it
      *at = run;
    } else {
      const typename Scan::State t = *at;
      *at = run;
      run = s.join(run, t);
    }
  }
}

// Pass 3: chunk c's outputs; carry is its carry (ignored for chunk 0).
template <class Scan, class T>
TP_HD void chunk_scan(const Scan& s, const T* x, void* out, const ChunkedLines& C, int64_t line, int64_t c,
                      const typename Scan::State* carry) {
  const int64_t i0 = c * C.len, i1 = i0 + C.len < C.lines.n ? i0 + C.len : C.lines.n;
  int64_t i = i0;
  typename Scan::State acc;
  if (c == 0) {
    acc = s.first(x[C.pos(line, 0)], 0);
    s.put(out, C.pos(line, 0), acc);
    ++i;
  } else {
    acc = *carry;
  }
  for (; i < i1; ++i) {
    const int64_t p = C.pos(line, i);
    acc = s.step(acc, x[p], i);
    s.put(out, p, acc);
  }
}

}  // namespace tapestry::scan
