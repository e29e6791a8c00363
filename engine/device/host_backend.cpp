#include "engine/device/host_backend.hpp"

#include <algorithm>
#include <climits>
#include <new>
#include <optional>

#include "engine/ir/error.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/stats.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/monoid.hpp"

namespace tapestry {

DeviceView HostBackend::wrap(const View& v) {
  internal_check(v.buf != nullptr);
  DeviceView d;
  d.mem = v.buf;
  d.layout = v;
  d.layout.buf = nullptr;
  return d;
}

bool HostBackend::is_host(const DeviceView& d) { return d.mem && d.mem->host_buffer(); }

View HostBackend::view(const DeviceView& d) const {
  const Buffer* b = d.mem ? d.mem->host_buffer() : nullptr;
  internal_check(b != nullptr);  // a view of another device's memory
  View v = d.layout;
  v.buf = std::shared_ptr<Buffer>(d.mem, const_cast<Buffer*>(b));  // owns d.mem, points at its buffer
  return v;
}

std::shared_ptr<DeviceMemory> HostBackend::allocate(size_t bytes) {
  try {
    return std::make_shared<Buffer>(bytes);
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating ", bytes, " bytes");
  }
}

void HostBackend::upload(const View& host, const DeviceView& dst) {
  internal_check(dst.is_contiguous());
  cpu::copy_view(host, view(dst));
}

void HostBackend::download(const DeviceView& src, const View& host) {
  internal_check(host.is_contiguous());
  cpu::copy_view(view(src), host);
}

// The CPU interprets a program of any size.
MapLimits HostBackend::map_limits() const { return {INT_MAX, INT_MAX}; }

void HostBackend::copy(const DeviceView& src, const DeviceView& dst) { cpu::copy_view(view(src), view(dst)); }

void HostBackend::map(const DeviceMapProgram& p, const DeviceView& out) {
  cpu::MapProgram hp;
  for (const DeviceView& l : p.leaves) hp.leaves.push_back(view(l));
  hp.instrs = p.instrs;
  hp.stream_out = p.stream_out;
  cpu::run_map(hp, view(out));
}

void HostBackend::reduce(Op op, const DeviceView& in, const std::vector<int>& dims, const DeviceView& out) {
  cpu::run_reduce(op, view(in), dims, view(out));
}

void HostBackend::argreduce(Op op, const DeviceView& in, int dim, const DeviceView& out) {
  cpu::run_argreduce(op, view(in), dim, view(out));
}

void HostBackend::matmul(const DeviceView& a, const DeviceView& b, const DeviceView& out) {
  cpu::run_matmul(view(a), view(b), view(out));
}

void HostBackend::line(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) {
  std::vector<View> v;
  for (const DeviceView& d : in) v.push_back(view(d));
  cpu::run_line(op, attrs, v, view(out));
}

void HostBackend::index(Op op, const Attrs& attrs, const std::vector<DeviceView>& in, const DeviceView& out) {
  std::vector<View> v;
  for (const DeviceView& d : in) v.push_back(view(d));
  cpu::run_index(op, attrs, v, view(out));
}

void HostBackend::linalg(Op op, const Attrs& attrs, const std::vector<DeviceView>& in,
                         const DeviceView& out) {
  std::vector<View> v;
  for (const DeviceView& d : in) v.push_back(view(d));
  cpu::run_linalg(op, attrs, v, view(out));
}

void HostBackend::generate(Op op, const Attrs& attrs, const Shape& global_shape,
                           const std::vector<int64_t>& origin, const DeviceView& out) {
  cpu::run_generate(op, attrs, global_shape, origin, view(out));
}

void HostBackend::correlate(const DeviceView& x, const DeviceView& k, const std::vector<int64_t>& origin,
                            const DeviceView& out) {
  cpu::run_correlate(view(x), view(k), origin, view(out));
}

void HostBackend::conv2d(const DeviceView& x, const DeviceView& w, const cpu::WindowAxis& h,
                         const cpu::WindowAxis& wd, int64_t out_per_group, int64_t o_origin,
                         const DeviceView& out) {
  cpu::run_conv2d(view(x), view(w), h, wd, out_per_group, o_origin, view(out));
}

void HostBackend::pool2d(Op op, const DeviceView& x, int64_t kh, int64_t kw, const cpu::WindowAxis& h,
                         const cpu::WindowAxis& wd, const DeviceView& out) {
  cpu::run_pool2d(op, view(x), kh, kw, h, wd, view(out));
}

namespace {

// Rows this many or more: run_reduce folds each row whole (it cuts rows only below its
// kSplitBelow outputs), so folding them from the map's tiles gives its result bit for bit.
constexpr int64_t kRowsWhole = 32;

// The elements of a row when `dims` (ascending) are shape's trailing dims and not all of them;
// 0 otherwise.
int64_t trailing_run(const Shape& shape, const std::vector<int>& dims) {
  const int r = static_cast<int>(shape.size());
  const int k = static_cast<int>(dims.size());
  if (k == 0 || k >= r) return 0;
  int64_t row = 1;
  for (int i = 0; i < k; ++i) {
    if (dims[static_cast<size_t>(i)] != r - k + i) return 0;
    row *= shape[static_cast<size_t>(r - k + i)];
  }
  return row;
}

std::shared_ptr<Value> alloc(DType t, const Shape& s) {
  const size_t bytes = static_cast<size_t>(numel(s)) * dtype_size(t);
  try {
    auto v = Value::alloc(t, s);
    stats().bytes_allocated += bytes;
    return v;
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating ", bytes, " bytes for a ", dtype_name(t), " tensor of shape ",
               shape_str(s));
  }
}

}  // namespace

void HostBackend::map_reduce(const DeviceMapProgram& p, const Shape& shape, Op op,
                             const std::vector<int>& dims, const DeviceView& out) {
  cpu::MapProgram hp;
  for (const DeviceView& l : p.leaves) hp.leaves.push_back(view(l));
  hp.instrs = p.instrs;
  map_reduce(std::move(hp), shape, op, dims, view(out));
}

void HostBackend::map_reduce(const cpu::MapProgram& p0, const Shape& shape, Op op,
                             const std::vector<int>& dims, const View& out, cpu::PreparedMap* prepared) {
  const int64_t rows = shape.empty() ? 1 : shape[0];
  const int64_t row_elems = shape.empty() ? 1 : numel(shape) / std::max<int64_t>(rows, 1);
  constexpr int64_t kChunkElems = 1 << 18;  // 1 MiB of f32: fits in L2 with the leaves' tiles
  const int64_t chunk_rows = std::max<int64_t>(1, kChunkElems / std::max<int64_t>(row_elems, 1));
  const DType mapped = p0.instrs.back().out;
  if (shape.empty() || chunk_rows >= rows) {  // small: one chunk
    // A small mapped operand (a dot product's, twice a CG iteration) goes into this thread's
    // scratch, kept for the next observation: its allocation and release cost ~0.9K
    // instructions of the ~2.4K such a reduction took. Not while another reduction on this
    // thread uses it (then use_count is 2 and a fresh one is allocated).
    constexpr int64_t kScratchBytes = 64 << 10;
    thread_local std::shared_ptr<Value> scratch;
    std::shared_ptr<Value> tmp;
    if (scratch && scratch.use_count() == 1 && scratch->v.dtype == mapped && scratch->v.shape == shape) {
      tmp = scratch;
    } else {
      tmp = alloc(mapped, shape);
      if (numel(shape) * static_cast<int64_t>(dtype_size(mapped)) <= kScratchBytes &&
          (!scratch || scratch.use_count() == 1))
        scratch = tmp;
    }
    if (prepared) prepared->run(p0, tmp->v);
    else cpu::run_map(p0, tmp->v);
    cpu::run_reduce(op, tmp->v, dims, out);
    return;
  }
  // Every dim reduced (a norm, a loss, a dot product): each tile of the map is folded as it
  // is computed, in L1, so the map's result never reaches memory (its write and read back
  // through a scratch made (x * x):sum() ~2x a read pass). Partials in the accumulator type.
  if (static_cast<int>(dims.size()) == static_cast<int>(shape.size())) {
    cpu::run_map_fold(p0, shape, op, out);
    return;
  }
  // The trailing dims reduced (a row's sum of squares, a softmax's denominator), over enough
  // rows that run_reduce folds each row whole: the rows folded from the map's tiles in L1, as
  // for a full reduction (the chunk path below writes and reads back a scratch: ~2-3x a read
  // pass).
  if (const int64_t row = trailing_run(shape, dims);
      row > 0 && out.is_contiguous() && out.numel() >= kRowsWhole) {
    cpu::run_map_fold_rows(p0, shape, op, row, out);
    return;
  }
  const bool dim0_reduced = !dims.empty() && dims[0] == 0;
  const std::optional<Monoid> monoid = monoid_of(op);
  internal_check(monoid.has_value());
  Shape chunk_shape = shape;
  chunk_shape[0] = chunk_rows;
  const int r = static_cast<int>(shape.size());
  const int64_t nchunks = (rows + chunk_rows - 1) / chunk_rows;
  // Chunks in parallel, each whole on one worker: its map into that worker's scratch (1 MiB,
  // in L2) and its reduction, both inline. Run one after another, each chunk's map and reduction
  // parallel inside, `(x * x):sum()` over 256 MiB took 34 ms, 3.8 times a read pass: two
  // hand-outs to the pool a MiB, the second reading back what the first had just written on
  // the other core. The chunks are cut by size, not by thread count, and with dim 0 reduced
  // every chunk after the first reduces into a partial of out's shape, combined into out in
  // chunk order once all ran: the same operations in the same order as the loop below, so the
  // same result bit for bit on any number of threads. (The loop below stays for outputs too
  // large to keep a partial of per chunk.)
  constexpr int64_t kMaxPartialElems = int64_t(1) << 16;
  // Rows r0 .. r0+n-1 of the map into tmp, through p (its leaves sliced to them): the chunk.
  const std::vector<int64_t> zero(r, 0), step(r, 1);
  auto map_chunk = [&](int64_t r0, int64_t n, cpu::MapProgram& p, const Value& tmp) {
    std::vector<int64_t> start(r, 0);
    start[0] = r0;
    Shape count = shape;
    count[0] = n;
    for (size_t i = 0; i < p0.leaves.size(); ++i) p.leaves[i] = p0.leaves[i].sliced(start, step, count);
    const View chunk = tmp.v.sliced(zero, step, count);
    cpu::run_map(p, chunk);
    return chunk;
  };
  // Dim 0 kept: the chunk's reduction is out's rows r0 .. r0+n-1.
  auto reduce_into_rows = [&](const View& chunk, int64_t r0, int64_t n) {
    std::vector<int64_t> ostart(out.rank(), 0), ostep(out.rank(), 1);
    Shape ocount = out.shape;
    ostart[0] = r0;
    ocount[0] = n;
    cpu::run_reduce(op, chunk, dims, out.sliced(ostart, ostep, ocount));
  };
  if (!dim0_reduced || (nchunks - 1) * out.numel() <= kMaxPartialElems) {
    std::vector<std::shared_ptr<Value>> scratch(static_cast<size_t>(cpu::pool_width()));
    std::vector<std::shared_ptr<Value>> part(dim0_reduced ? static_cast<size_t>(nchunks) : 0);
    cpu::parallel_for(nchunks, 1, [&](int64_t lo, int64_t hi, int worker) {
      std::shared_ptr<Value>& tmp = scratch[static_cast<size_t>(worker)];
      if (!tmp) tmp = alloc(mapped, chunk_shape);
      cpu::MapProgram p = p0;
      for (int64_t k = lo; k < hi; ++k) {
        if (cancel_requested()) throw Cancelled();
        const int64_t r0 = k * chunk_rows, n = std::min(chunk_rows, rows - r0);
        const View chunk = map_chunk(r0, n, p, *tmp);
        if (!dim0_reduced) {
          reduce_into_rows(chunk, r0, n);
        } else if (k == 0) {
          cpu::run_reduce(op, chunk, dims, out);
        } else {
          part[static_cast<size_t>(k)] = alloc(out.dtype, out.shape);
          cpu::run_reduce(op, chunk, dims, part[static_cast<size_t>(k)]->v);
        }
      }
    });
    for (int64_t k = 1; dim0_reduced && k < nchunks; ++k)
      cpu::combine_into(*monoid, out, part[static_cast<size_t>(k)]->v);
    return;
  }
  // Dim 0 reduced into a large output: one chunk at a time, each combined into out at once.
  auto tmp = alloc(mapped, chunk_shape);
  auto part = alloc(out.dtype, out.shape);
  cpu::MapProgram p = p0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    if (cancel_requested()) throw Cancelled();
    const View chunk = map_chunk(r0, std::min(chunk_rows, rows - r0), p, *tmp);
    if (r0 == 0) {
      cpu::run_reduce(op, chunk, dims, out);
    } else {
      cpu::run_reduce(op, chunk, dims, part->v);
      cpu::combine_into(*monoid, out, part->v);
    }
  }
}

void HostBackend::map_banded(const cpu::MapProgram& p, const std::vector<Stencil>& stencils,
                             const View& out) {
  constexpr int64_t kBandElems = int64_t(1) << 17;  // a band: 512 KiB of f32, in L2
  const Shape& shape = out.shape;
  const int r = static_cast<int>(shape.size());
  const int64_t rows = shape[0], row_elems = numel(shape) / rows;
  const int64_t band = std::clamp<int64_t>(kBandElems / std::max<int64_t>(row_elems, 1), 1, rows);
  const int64_t nbands = (rows + band - 1) / band;
  const bool stream = out.numel() * static_cast<int64_t>(dtype_size(out.dtype)) >= (int64_t(32) << 20);
  Shape band_shape = shape;
  band_shape[0] = band;
  int u_leaf = -1;
  float c = 0;
  const bool axpy = stencils.size() == 1 && cpu::axpy_form(p, stencils[0].leaf, u_leaf, c);
  std::vector<std::vector<std::shared_ptr<Value>>> scratch(static_cast<size_t>(cpu::pool_width()));
  cpu::parallel_for(nbands, 1, [&](int64_t lo, int64_t hi, int worker) {
    auto& bufs = scratch[static_cast<size_t>(worker)];
    if (bufs.empty())
      for (const Stencil& s : stencils) bufs.push_back(alloc(s.x.dtype, band_shape));
    cpu::MapProgram pb = p;
    pb.stream_out = stream;
    std::vector<int64_t> start(r, 0), zero(r, 0), step(r, 1);
    for (int64_t b = lo; b < hi; ++b) {
      if (cancel_requested()) throw Cancelled();
      start[0] = b * band;
      Shape count = shape;
      count[0] = std::min(band, rows - start[0]);
      for (size_t i = 0; i < p.leaves.size(); ++i)
        if (p.leaves[i].buf) pb.leaves[i] = p.leaves[i].sliced(start, step, count);
      if (axpy) {  // u + c * stencil: applied by the stencil kernel as it stores
        std::vector<int64_t> origin = stencils[0].origin;
        origin[0] += start[0];
        if (cpu::run_correlate_axpy(stencils[0].x, stencils[0].k, origin,
                                    pb.leaves[static_cast<size_t>(u_leaf)], c, out.sliced(start, step, count),
                                    stream))
          continue;
      }
      for (size_t j = 0; j < stencils.size(); ++j) {
        std::vector<int64_t> origin = stencils[j].origin;
        origin[0] += start[0];
        const View piece = bufs[j]->v.sliced(zero, step, count);
        cpu::run_correlate(stencils[j].x, stencils[j].k, origin, piece);
        pb.leaves[static_cast<size_t>(stencils[j].leaf)] = piece;
      }
      cpu::run_map(pb, out.sliced(start, step, count));
    }
  });
}

}  // namespace tapestry
