// Parallel .npy I/O of sharded tensors (parallel_io.hpp).
#include "engine/io/parallel_io.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry::io {

namespace {

constexpr uint32_t kIoMagic = 0x4f495054;  // "TPIO"

template <class T> void put(std::vector<char>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T> T get(std::span<const char>& in) {
  if (in.size() < sizeof(T)) throw Error("io message rejected: truncated");
  T v;
  std::memcpy(&v, in.data(), sizeof(T));
  in = in.subspan(sizeof(T));
  return v;
}

uint64_t count(std::span<const char>& in, size_t min_each) {
  const uint64_t n = get<uint64_t>(in);
  if (n > in.size() / std::max<size_t>(1, min_each)) throw Error("io message rejected: bad count");
  return n;
}

void put_ints(std::vector<char>& out, const std::vector<int64_t>& v) {
  put<uint64_t>(out, v.size());
  for (int64_t x : v) put(out, x);
}

std::vector<int64_t> get_ints(std::span<const char>& in) {
  std::vector<int64_t> v(count(in, 8));
  for (int64_t& x : v) x = get<int64_t>(in);
  return v;
}

}  // namespace

std::vector<char> encode_io(const std::vector<IoTask>& tasks) {
  std::vector<char> out;
  put(out, kIoMagic);
  put<uint64_t>(out, tasks.size());
  for (const IoTask& t : tasks) {
    put<uint8_t>(out, t.kind);
    put<uint64_t>(out, t.path.size());
    out.insert(out.end(), t.path.begin(), t.path.end());
    put(out, t.key);
    put<uint8_t>(out, static_cast<uint8_t>(t.header.dtype));
    put<uint8_t>(out, t.header.fortran_order);
    put(out, t.header.data_offset);
    put_ints(out, t.header.shape);
    put<uint64_t>(out, t.shards.size());
    for (const plan::Shard& s : t.shards) {
      put<int32_t>(out, s.rank);
      put_ints(out, s.box.lo);
      put_ints(out, s.box.hi);
    }
  }
  return out;
}

std::vector<IoTask> decode_io(std::span<const char> in) {
  if (get<uint32_t>(in) != kIoMagic) throw Error("io message rejected: bad magic");
  std::vector<IoTask> tasks(count(in, 16));
  for (IoTask& t : tasks) {
    const uint8_t kind = get<uint8_t>(in);
    if (kind != IoTask::Read && kind != IoTask::Write) throw Error("io message rejected: bad kind");
    t.kind = static_cast<IoTask::Kind>(kind);
    const uint64_t n = count(in, 1);
    t.path.assign(in.data(), n);
    in = in.subspan(n);
    t.key = get<uint64_t>(in);
    const uint8_t dt = get<uint8_t>(in);
    if (dt >= kNumDTypes) throw Error("io message rejected: bad dtype");
    t.header.dtype = static_cast<DType>(dt);
    t.header.fortran_order = get<uint8_t>(in) != 0;
    t.header.data_offset = get<int64_t>(in);
    t.header.shape = get_ints(in);
    t.shards.resize(count(in, 20));
    for (plan::Shard& s : t.shards) {
      s.tensor = t.key;
      s.rank = get<int32_t>(in);
      s.box.lo = get_ints(in);
      s.box.hi = get_ints(in);
      if (s.box.lo.size() != t.header.shape.size() || s.box.hi.size() != t.header.shape.size())
        throw Error("io message rejected: a box of the wrong rank");
    }
  }
  if (!in.empty()) throw Error("io message rejected: trailing bytes");
  return tasks;
}

void run_io_part(const std::vector<IoTask>& tasks, int rank) {
  // TAPESTRY_IO_FAULT=RANK: that rank fails every I/O job (the tests' way to fail one rank).
  if (const char* f = std::getenv("TAPESTRY_IO_FAULT"); f && std::atoi(f) == rank && *f)
    throw Error("injected I/O failure (TAPESTRY_IO_FAULT)");
  for (const IoTask& t : tasks) {
    for (const plan::Shard& s : t.shards) {
      if (s.rank != rank) continue;
      if (t.kind == IoTask::Read) {
        auto v = Value::alloc(t.header.dtype, s.box.extents());
        read_npy_box(t.path, t.header, s.box, v->view());
        shard_store().put(rank, t.key, s.box, v->view());
      } else {
        const std::optional<View> v = shard_store().find(rank, t.key, s.box);
        if (!v)
          throw InternalError(cat_str("'", t.path, "': no stored shard ", poly::to_string(s.box), " of %", t.key,
                                      " on rank ", rank));
        write_npy_box(t.path, t.header, s.box, *v);
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
