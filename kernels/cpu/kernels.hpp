// The CPU kernels: one entry point per block-operation kind.
//   MapProgram p; p.leaves = {a, b}; p.instrs = {{Op::Mul, F32, F32, 0, 1}, {Op::Tanh, F32, F32, 2}};
//   run_map(p, out);       // out = tanh(a * b) in one pass over memory
//   run_matmul(a, b, out); // OpenBLAS for f32/f64
// Outputs are always contiguous views of the right shape and dtype, allocated by the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/ir/fused.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "kernels/monoid.hpp"

namespace tapestry::cpu {

// A fused elementwise program. Register r < leaves.size() is leaf r; register
// leaves.size() + j is the result of instrs[j]; the last instruction is the output.
using MapProgram = MapProgramOf<View>;  // engine/ir/fused.hpp
void run_map(const MapProgram& p, const View& out);

// run_map for a program run again and again on new data of the same layouts (the evaluator's
// kept schedules, engine/run/schedule.hpp): a small map's registers, coalesced dims and tile
// slots are derived once, and a later run with the same instructions, leaf and output
// shapes, strides and dtypes only re-reads the addresses and the constants. Bit for bit
// run_map's results. One object serves one caller at a time.
class PreparedMap {
 public:
  PreparedMap();
  ~PreparedMap();
  PreparedMap(PreparedMap&&) noexcept;
  PreparedMap& operator=(PreparedMap&&) noexcept;
  void run(const MapProgram& p, const View& out);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// run_map of p over `shape` followed by run_reduce of every dim into out (one element), with
// the map's result folded tile by tile as it is computed (fold_tiles): it never reaches memory.
// p has instructions; op is a Reduce op run_reduce takes for the map's dtype.
void run_map_fold(const MapProgram& p, const Shape& shape, Op op, const View& out);
// The same with the reduction over the trailing dims only: each row of `row` elements of the
// map's result into one element of out (contiguous), folded as fold_rows folds it.
void run_map_fold_rows(const MapProgram& p, const Shape& shape, Op op, int64_t row, const View& out);

// The elements of a result computed a tile at a time: tile(t, worker) points at elements
// t * tile_elems ... of it (the last tile shorter), valid until worker's next call.
using TileSource = std::function<const void*(int64_t tile, int worker)>;
// run_reduce of every one of the n elements (dtype `in`) that `tile` yields into out (one
// element). Tiles are folded in fixed chunks, in parallel: each chunk as run_reduce folds a
// contiguous run (16 lanes, then the tail), its partial kept in the accumulator type (f64 for
// floats), the partials joined in chunk order: the same result on any number of threads.
// tile_elems: a multiple of 16.
void fold_tiles(Op op, DType in, int64_t n, int64_t tile_elems, const TileSource& tile, const View& out);
// run_reduce of each row of `row` consecutive elements of the nrows * row that `tile` yields into
// out[i] (out contiguous, nrows elements): every row folded as run_reduce folds a contiguous
// row when it has enough outputs not to cut rows (16 lanes, then the tail; short rows eight at
// a time), so the same result bit for bit, on any number of threads.
void fold_rows(Op op, DType in, int64_t nrows, int64_t row, int64_t tile_elems, const TileSource& tile,
               const View& out);

// Reduce `in` over `dims` (0-based ascending) into `out` (in's shape without dims).
// Sum/Prod of ints and bools accumulate in i64; floats accumulate in f64.
void run_reduce(Op op, const View& in, const std::vector<int>& dims, const View& out);
// acc = acc m part elementwise (same shape and dtype, any strides): merging the partial results
// of a split reduction, bit for bit as run_reduce folds (kernels/monoid.hpp).
void combine_into(Monoid m, const View& acc, const View& part);
// Every element of v (contiguous) = m's identity: the partial of a member that computed none.
void fill_identity(Monoid m, const View& v);

// One-pass moments (moments.cpp): x (contiguous, f32 or f64) is `rows` rows of equal length;
// out[r] gets row r's count, sum, mean and m2 = sum (x - mean)^2, in f64, from one read pass
// (chunks shifted by their first element, merged by Chan's formula; independent of threads).
// sum is accumulated as is (so an inf element gives inf, where the mean may be NaN). The mean is
// kept as shift + dmean, shift an element of the row: merges and (mean - m) then lose no digits
// to the mean's magnitude when the spread is tiny against it.
struct Moments {
  int64_t count = 0;
  double sum = 0;
  double shift = 0;
  double dmean = 0;
  double m2 = 0;
  double mean() const { return shift + dmean; }
};
void run_moments(const View& x, int64_t rows, Moments* out);
void merge_moments(Moments& a, const Moments& b);  // a = the moments of a's and b's elements

// 1-based index (i64) of the first max/min along `dim`, or over the flattened
// tensor when dim < 0. NaN counts as the extreme, as numpy.
void run_argreduce(Op op, const View& in, int dim, const View& out);

// The Line ops (line.cpp) over whole lines along LineAttrs::dim: Cumsum, Cumprod, Cummax, Cummin,
// Logcumsumexp (in f64), Sort (stable, NaN last), LineScatterAdd {g, idx}, and Searchsorted
// {sorted 1-D, values} (1-based insertion points), and Fft (run_fft). Inputs any strides; out
// contiguous.
void run_line(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out);
// The unnormalized DFT of c64 or c128 lines along dim (fft.cpp, FFTW3), e^(+i) when inverse.
void run_fft(const View& in, const View& out, int dim, bool inverse);

// out[..., n, m] = a[..., n, k] @ b[..., k, m]; batch dims of a and b are broadcast
// to out's (strides 0). All three share one dtype.
void run_matmul(const View& a, const View& b, const View& out);

// o[i] = a[i] * b[i] for f32 (a null a or b: the constant ca or cb), each the IEEE product bit for
// bit, without the microcode assist a multiply that underflows to a subnormal costs (multiply.cpp).
void multiply_f32(float* o, const float* a, const float* b, float ca, float cb, int64_t n);

// Gather, Scatter, ScatterAdd (in {x, index[, src]}, IndexAttrs) and Nonzero (in {bool mask},
// out {count} i64): inputs any strides, out contiguous. A block sees x whole along the indexed
// dim (engine/poly/signature_of.cpp), so a position is local. An index value out of range is a
// user error naming the function the user called, the value and the dim.
void run_index(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out);

// The LAPACK ops (Solve, Cholesky, Det, Slogdet, Qr, Svd, Eigh) on every matrix of the batch:
// inputs {..., m, n} (any strides, batch dims equal), out contiguous {..., parts} of their
// dtype (f32 or f64). A singular or indefinite matrix is a user error naming the function.
// x:declare's check (check_declared.cpp): copies in to out, or raises naming the group that fails.
void run_check_declared(const Attrs& attrs, const View& in, const View& out);
void run_linalg(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out);

// Fill `out`, the box of a generated tensor of `global_shape` whose first element
// sits at `origin` (so a shard computes the same values as the whole).
void run_generate(Op op, const Attrs& attrs, const Shape& global_shape, const std::vector<int64_t>& origin,
                  const View& out);

// Elementwise copy between two views of the same shape and dtype.
void copy_view(const View& src, const View& dst);

// --- windows (window.cpp) ----------------------------------------------------------------
// A windowed dim: output position y with kernel tap r reads input coordinate
// stride*y + dilation*r + origin of the view; coordinates outside the view read as padding.
// origin is -padding for a whole tensor; a block passes where its slice starts instead.
struct WindowAxis {
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t origin = 0;
};
// out[y] = sum_r x[y + r + origin] * k[r] in every dim (stride and dilation 1), zeros outside x.
// x, k and out share a non-bool dtype; each element sums its taps in the same order always.
// Taps whose weight is exactly 0 are skipped (as scipy.ndimage does): the same sums for finite
// x, and an inf or NaN under a zero weight does not spread.
void run_correlate(const View& x, const View& k, const std::vector<int64_t>& origin, const View& out);
// out = u + c * correlate(x, k) in one pass, bit for bit the map program Add(u, Mul(c, s)) in
// f32 over run_correlate's s: a stencil step (heat, diffusion) without its output ever stored.
// 2-D f32 with a small kernel and u rows contiguous only; false (nothing written) otherwise.
bool run_correlate_axpy(const View& x, const View& k, const std::vector<int64_t>& origin, const View& u,
                        float c, const View& out, bool stream);
// Whether p (over leaves 0 and 1) is u + c * s with s = leaf s_leaf, in f32, either operand
// order: then u_leaf and c say what run_correlate_axpy needs.
bool axpy_form(const MapProgram& p, int s_leaf, int& u_leaf, float& c);
// out {N,O,OH,OW} = x {N,C,H,W} (*) w {O,Cg,KH,KW}. Output channel o (o_origin + o globally)
// reads input channels g*Cg .. g*Cg+Cg-1 of x with g = (o_origin + o) / out_per_group
// (without groups: x holds exactly w's Cg channels and out_per_group is huge). f32/f64 run
// im2col + BLAS gemm; integers a direct loop.
void run_conv2d(const View& x, const View& w, const WindowAxis& h, const WindowAxis& wd,
                int64_t out_per_group, int64_t o_origin, const View& out);
// Max or average over kh x kw windows of NCHW; padding never wins a max and counts as 0 in an
// average, which always divides by kh*kw. Avg's out is float (x is cast by the builder).
void run_pool2d(Op op, const View& x, int64_t kh, int64_t kw, const WindowAxis& h, const WindowAxis& wd,
                const View& out);

// Threads used by the kernels (default: hardware concurrency). The pool is the process's: a
// session sets it from its Config (TAPESTRY_THREADS), before the first kernel when it can.
int num_threads();
void set_num_threads(int n);

// The instruction set of the hot loops (vector_kernels.hpp): the build's own (AVX2) or AVX-512,
// chosen on first use as the widest this CPU runs. A session may narrow it (TAPESTRY_ISA=avx2).
enum class Isa { Base, Avx512 };
Isa isa();
bool isa_available(Isa i);    // built, and this CPU and OS run it
bool set_isa(Isa i);          // false (and no change) if not available
const char* isa_name(Isa i);  // "avx2" / "avx512" ("x86-64" for a build without AVX2)

}  // namespace tapestry::cpu
