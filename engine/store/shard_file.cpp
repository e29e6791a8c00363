// Layout of a message or file: {magic "TPPC", version, count u64} then per piece
//   key u64, rank i32, box (dims u32, lo, hi), dtype u8, shape, data (u64 length + bytes).
#include "engine/store/shard_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

constexpr uint32_t kPiecesMagic = 0x43505054;  // "TPPC"
constexpr uint32_t kPiecesVersion = 1;
constexpr uint32_t kMaxDims = 64;

void put_piece(ByteWriter& w, uint64_t key, int rank, const poly::Box& box, const View& v) {
  w.put(key);
  w.put<int32_t>(rank);
  w.put<uint32_t>(static_cast<uint32_t>(box.lo.size()));
  for (int64_t x : box.lo) w.put(x);
  for (int64_t x : box.hi) w.put(x);
  w.put<uint8_t>(static_cast<uint8_t>(v.dtype));
  w.vec(v.shape);
  View dense = v;
  if (!v.is_contiguous()) {
    auto copy = Value::alloc(v.dtype, v.shape);
    cpu::copy_view(v, copy->v);
    dense = copy->v;
  }
  const size_t n = static_cast<size_t>(dense.numel()) * dtype_size(dense.dtype);
  w.vec(std::span<const char>(dense.byte_ptr(), n));
}

// Reads one piece and puts it into `store` under `as_rank`; its payload bytes.
int64_t get_piece(ByteReader& r, ShardStore& store, int as_rank) {
  const uint64_t key = r.get<uint64_t>();
  const int32_t rank = r.get<int32_t>();
  const uint32_t dims = r.get<uint32_t>();
  if (dims > kMaxDims) r.reject(cat_str("a piece has ", dims, " dims"));
  poly::Box box;
  box.lo.resize(dims);
  box.hi.resize(dims);
  for (int64_t& x : box.lo) x = r.get<int64_t>();
  for (int64_t& x : box.hi) x = r.get<int64_t>();
  const uint8_t dt = r.get<uint8_t>();
  if (dt >= kNumDTypes) r.reject(cat_str("dtype number ", int(dt)));
  const Shape shape = r.vec<int64_t>();
  if (shape.size() != dims) r.reject("a piece's shape and box differ in dims");
  int64_t numel = 1;
  for (size_t d = 0; d < dims; ++d) {
    if (shape[d] < 0 || shape[d] != box.extent(static_cast<int>(d)))
      r.reject("a piece's shape is not its box's");
    numel *= shape[d];
  }
  const DType dtype = static_cast<DType>(dt);
  const std::vector<char> data = r.vec<char>();
  const size_t n = data.size();
  if (n != static_cast<size_t>(numel) * dtype_size(dtype)) r.reject("a piece's data is not its shape's");
  auto v = Value::alloc(dtype, shape);
  if (n) std::memcpy(v->v.byte_ptr(), data.data(), n);
  (void)rank;  // the sender's; the reader says which rank the piece stands for here
  store.put(as_rank, key, box, v->v);
  return static_cast<int64_t>(n);
}

std::string piece_file(const std::string& dir, uint64_t key, int rank, int writer) {
  return cat_str(dir, "/k", key, "-r", rank, "-w", writer);
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat_str("'", path, "': cannot read: ", std::strerror(errno)));
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::vector<char> encode_pieces(const ShardStore& store, const std::vector<uint64_t>& keys, int rank) {
  ByteWriter w;
  encode_pieces_to(w, store, keys, rank);
  return w.take();
}

void encode_pieces_to(ByteWriter& w, const ShardStore& store, const std::vector<uint64_t>& keys, int rank) {
  w.header(kPiecesMagic, kPiecesVersion);
  std::vector<std::pair<uint64_t, std::vector<std::pair<poly::Box, View>>>> all;
  size_t count = 0;
  for (uint64_t k : keys) {
    all.emplace_back(k, store.pieces(k, rank));
    count += all.back().second.size();
  }
  w.size(count);
  for (const auto& [k, ps] : all)
    for (const auto& [box, v] : ps) put_piece(w, k, rank, box, v);
}

int64_t decode_pieces_into(std::span<const char> bytes, ShardStore& store, int as_rank) {
  ByteReader r(bytes, "replica message");
  r.header(kPiecesMagic, kPiecesVersion);
  int64_t kept = 0;
  for (size_t i = 0, n = r.count(16); i < n; ++i) kept += get_piece(r, store, as_rank);
  r.end();
  return kept;
}

void salvage_store(const ShardStore& store, const std::string& dir, int writer) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto& [key, rank] : store.holdings()) {
    const std::vector<char> bytes = encode_pieces(store, {key}, rank);
    const std::string path = piece_file(dir, key, rank, writer);
    const std::string tmp = path + ".partial";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    const bool ok = f && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const int err = errno;
    if (f && std::fclose(f) != 0 && ok)
      throw Error(cat_str("'", tmp, "': cannot write: ", std::strerror(errno)));
    if (!ok) {
      std::remove(tmp.c_str());
      throw Error(cat_str("'", tmp, "': cannot write: ", std::strerror(err)));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(cat_str("'", path, "': cannot write: ", std::strerror(errno)));
  }
  FILE* done = std::fopen(cat_str(dir, "/w", writer, ".done").c_str(), "w");
  if (done) std::fclose(done);
}

std::set<std::pair<uint64_t, int>> salvaged_pieces(const std::string& dir) {
  std::set<std::pair<uint64_t, int>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    unsigned long long key = 0;
    int rank = 0, writer = 0;
    char rest = 0;
    const std::string name = e.path().filename().string();
    if (std::sscanf(name.c_str(), "k%llu-r%d-w%d%c", &key, &rank, &writer, &rest) == 3)
      out.insert({key, rank});
  }
  return out;
}

bool load_salvaged(ShardStore& store, const std::string& dir, uint64_t key, int old_rank, int new_rank) {
  std::string path = piece_file(dir, key, old_rank, old_rank);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    path.clear();
    const std::string prefix = cat_str("k", key, "-r", old_rank, "-w");
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0 && name.find('.') == std::string::npos) {
        path = e.path().string();
        break;
      }
    }
    if (path.empty()) return false;
  }
  const std::vector<char> bytes = read_all(path);
  ByteReader r(bytes, cat_str("salvaged piece file '", path, "'"));
  r.header(kPiecesMagic, kPiecesVersion);
  for (size_t i = 0, n = r.count(16); i < n; ++i) get_piece(r, store, new_rank);
  r.end();
  return true;
}

}  // namespace tapestry
