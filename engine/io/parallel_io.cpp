// Parallel .npy I/O of sharded tensors (parallel_io.hpp).
#include "engine/io/parallel_io.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include <fcntl.h>

#include <mutex>

#include "engine/io/csv.hpp"
#include "engine/io/hdf5.hpp"
#include "engine/io/write_file.hpp"
#include "engine/io/zarr.hpp"
#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/store/shard_store.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

constexpr uint32_t kIoMagic = 0x4f495054;  // "TPIO"
constexpr uint32_t kIoVersion = 3;         // 2: an HDF5 dataset name per task; 3: CSV steps

// The texts of CSV rows a Format step made, by (task key, shard index), until the Place or
// Discard step of the same save: under MPI each process keeps its own ranks' texts.
std::mutex g_texts_mu;
std::map<std::pair<uint64_t, size_t>, std::string> g_texts;

void csv_step(const IoTask& t, int rank, ShardStore& store) {
  for (size_t i = 0; i < t.shards.size(); ++i) {
    const plan::Shard& s = t.shards[i];
    if (s.rank != rank) continue;
    const std::pair<uint64_t, size_t> key{t.key, i};
    if (t.step == IoTask::Render) {
      const std::optional<View> v = store.find(rank, t.key, s.box);
      if (!v)
        throw InternalError(cat_str("'", t.path, "': no stored shard ", poly::to_string(s.box), " of %",
                                    t.key, " on rank ", rank));
      std::string text = format_csv_rows(*v, t.delimiter);
      auto n = Value::alloc(DType::I64, {1});
      n->view().ptr<int64_t>()[0] = static_cast<int64_t>(text.size());
      store.put(rank, t.aux_key, poly::Box({static_cast<int64_t>(i)}, {static_cast<int64_t>(i)}), n->view());
      const std::lock_guard<std::mutex> lock(g_texts_mu);
      g_texts[key] = std::move(text);
    } else if (t.step == IoTask::Place) {
      std::string text;
      {
        const std::lock_guard<std::mutex> lock(g_texts_mu);
        auto it = g_texts.find(key);
        internal_check(it != g_texts.end() && i < t.offsets.size());
        text = std::move(it->second);
        g_texts.erase(it);
      }
      const WriteFile f(t.path, O_WRONLY, "for writing");
      f.write_at(text.data(), text.size(), t.offsets[i], false);  // counted when formatted
      stats().bytes_written += text.size();
    } else {
      const std::lock_guard<std::mutex> lock(g_texts_mu);
      g_texts.erase(key);
    }
  }
}

}  // namespace

std::vector<char> encode_io(const std::vector<IoTask>& tasks) {
  ByteWriter w;
  w.header(kIoMagic, kIoVersion);
  w.size(tasks.size());
  for (const IoTask& t : tasks) {
    w.put<uint8_t>(t.kind);
    w.str(t.path);
    w.put(t.key);
    w.put<uint8_t>(static_cast<uint8_t>(t.header.dtype));
    w.put<uint8_t>(t.header.fortran_order);
    w.put(t.header.data_offset);
    w.vec(t.header.shape);
    w.put<uint8_t>(t.format);
    w.str(t.dataset);
    w.put<uint8_t>(t.step);
    w.put<uint8_t>(static_cast<uint8_t>(t.delimiter));
    w.put(t.aux_key);
    w.vec(t.offsets);
    w.size(t.shards.size());
    for (const plan::Shard& s : t.shards) {
      w.put<int32_t>(s.rank);
      w.vec(s.box.lo);
      w.vec(s.box.hi);
    }
  }
  return w.take();
}

std::vector<IoTask> decode_io(std::span<const char> bytes) {
  ByteReader r(bytes, "io message");
  r.header(kIoMagic, kIoVersion);
  std::vector<IoTask> tasks(
      r.count(55));  // kind, path, key, dtype, order, offset, shape, format, dataset, csv fields, shards
  for (IoTask& t : tasks) {
    const uint8_t kind = r.get<uint8_t>();
    if (kind != IoTask::Read && kind != IoTask::Write) r.reject(cat_str("task kind ", int(kind)));
    t.kind = static_cast<IoTask::Kind>(kind);
    t.path = r.str();
    t.key = r.get<uint64_t>();
    const uint8_t dt = r.get<uint8_t>();
    if (dt >= kNumDTypes) r.reject(cat_str("dtype number ", int(dt)));
    t.header.dtype = static_cast<DType>(dt);
    t.header.fortran_order = r.get<uint8_t>() != 0;
    t.header.data_offset = r.get<int64_t>();
    t.header.shape = r.vec<int64_t>();
    const uint8_t format = r.get<uint8_t>();
    if (format > IoTask::Csv) r.reject(cat_str("format ", int(format)));
    t.format = static_cast<IoTask::Format>(format);
    t.dataset = r.str();
    const uint8_t step = r.get<uint8_t>();
    if (step > IoTask::Discard) r.reject(cat_str("step ", int(step)));
    t.step = static_cast<IoTask::Step>(step);
    t.delimiter = static_cast<char>(r.get<uint8_t>());
    t.aux_key = r.get<uint64_t>();
    t.offsets = r.vec<int64_t>();
    t.shards.resize(r.count(20));
    for (plan::Shard& s : t.shards) {
      s.tensor = t.key;
      s.rank = r.get<int32_t>();
      s.box.lo = r.vec<int64_t>();
      s.box.hi = r.vec<int64_t>();
      if (s.box.lo.size() != t.header.shape.size() || s.box.hi.size() != t.header.shape.size())
        r.reject("a box of the wrong rank");
    }
  }
  r.end();
  return tasks;
}

void write_box(const IoTask& t, const poly::Box& box, const View& v) {
  if (t.format == IoTask::Hdf5) write_hdf5_chunked_box(t.path, t.dataset, box, v);
  else if (t.format == IoTask::Zarr) write_zarr_chunk(t.path, read_zarr_meta(t.path), box, v);
  else if (t.format == IoTask::Raw) write_npy_box(t.path, t.header, box, v);
  else internal_fail(__FILE__, __LINE__, "write_box: a CSV write goes in steps");
}

void run_io_part(const std::vector<IoTask>& tasks, int rank, ShardStore& store, int fail_rank) {
  if (rank == fail_rank && !(tasks.size() == 1 && tasks[0].step == IoTask::Discard))
    throw Error("injected I/O failure (TAPESTRY_IO_FAULT)");
  for (const IoTask& t : tasks) {
    if (t.format == IoTask::Csv) {
      csv_step(t, rank, store);
      continue;
    }
    std::optional<ZarrMeta> zarr;  // a zarr write's .zarray, read once
    if (t.format == IoTask::Zarr && t.kind == IoTask::Write) zarr = read_zarr_meta(t.path);
    for (const plan::Shard& s : t.shards) {
      if (s.rank != rank) continue;
      if (t.kind == IoTask::Read) {
        auto v = Value::alloc(t.header.dtype, s.box.extents());
        if (t.format == IoTask::Hdf5) read_hdf5_box(t.path, t.dataset, s.box, v->view());
        else if (t.format == IoTask::Zarr) read_zarr_box(t.path, read_zarr_meta(t.path), s.box, v->view());
        else read_npy_box(t.path, t.header, s.box, v->view());
        store.put(rank, t.key, s.box, v->view());
      } else {
        const std::optional<View> v = store.find(rank, t.key, s.box);
        if (!v)
          throw InternalError(cat_str("'", t.path, "': no stored shard ", poly::to_string(s.box), " of %",
                                      t.key, " on rank ", rank));
        if (zarr) write_zarr_chunk(t.path, *zarr, s.box, *v);
        else write_box(t, s.box, *v);
      }
    }
  }
}

std::vector<plan::Shard> row_split(uint64_t key, const Shape& shape, int ranks) {
  if (shape.empty() || ranks <= 1) return {plan::Shard{key, poly::Box::of_shape(shape), 0}};
  std::vector<plan::Shard> out;
  const int64_t rows = shape[0];
  const int parts = static_cast<int>(std::min<int64_t>(ranks, rows));
  int64_t lo = 0;
  for (int r = 0; r < parts; ++r) {
    const int64_t n = rows / parts + (r < rows % parts ? 1 : 0);
    poly::Box b = poly::Box::of_shape(shape);
    b.lo[0] = lo;
    b.hi[0] = lo + n - 1;
    out.push_back(plan::Shard{key, b, r});
    lo += n;
  }
  return out;
}

IoTask read_task(const std::string& path, const NpyHeader& h, const NodeRef& leaf, int ranks) {
  IoTask t;
  t.kind = IoTask::Read;
  t.path = path;
  t.key = leaf->id;
  t.header = h;
  t.shards = row_split(leaf->id, h.shape, ranks);
  return t;
}

}  // namespace tapestry::io
