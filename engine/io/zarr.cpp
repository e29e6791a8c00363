// zarr v2 directory stores (zarr.hpp).
#include "engine/io/zarr.hpp"

#include "engine/io/byte_source.hpp"

#include <blosc.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/io/chunk_grid.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

template <class... Args> [[noreturn]] void fail(const std::string& dir, const Args&... args) {
  throw Error(cat_str("'", dir, "': ", args...));
}

// A whole file, or nullopt when it does not exist.
// (A file or a URL: byte_source.hpp.)
std::optional<std::string> slurp(const std::string& dir, const std::string& path) {
  try {
    return read_object(path);
  } catch (const Error& e) {
    fail(dir, "cannot read '", path, "': ", e.what());
  }
}

struct DTypeCode {
  DType dtype;
  const char* code;
};
// Zarr v2's codes are numpy's; bf16 has none (refused).
constexpr DTypeCode kCodes[] = {{DType::F32, "<f4"},  {DType::F64, "<f8"},  {DType::I32, "<i4"},
                                {DType::I64, "<i8"},  {DType::Bool, "|b1"}, {DType::I8, "|i1"},
                                {DType::U8, "|u1"},   {DType::F16, "<f2"},  {DType::C64, "<c8"},
                                {DType::C128, "<c16"}};

std::string chunk_key(const std::vector<int64_t>& idx, char sep) {
  if (idx.empty()) return "0";
  std::string k;
  for (size_t i = 0; i < idx.size(); ++i) k += (i ? std::string(1, sep) : "") + std::to_string(idx[i]);
  return k;
}

std::string decode(const std::string& dir, const std::string& key, const ZarrCompressor& c,
                   const std::string& in, size_t want) {
  if (c.id.empty()) {
    if (in.size() != want) fail(dir, "chunk ", key, " holds ", in.size(), " bytes, not ", want);
    return in;
  }
  std::string out(want, '\0');
  bool ok = false;
  if (c.id == "zlib" || c.id == "gzip") {
    z_stream z{};
    ok = inflateInit2(&z, 15 + 32) == Z_OK;  // 15 + 32: a zlib or gzip header, detected
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(want);
    ok = ok && inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == want;
    inflateEnd(&z);
  } else if (c.id == "zstd") {
    const size_t n = ZSTD_decompress(out.data(), want, in.data(), in.size());
    ok = !ZSTD_isError(n) && n == want;
  } else if (c.id == "blosc") {
    ok = blosc_decompress_ctx(in.data(), out.data(), want, 1) == static_cast<int>(want);
  }
  if (!ok) fail(dir, "chunk ", key, " does not decode with ", c.id, " to ", want, " bytes");
  return out;
}

std::string encode(const std::string& path, const ZarrCompressor& c, const std::string& in, size_t typesize) {
  if (c.id.empty()) return in;
  std::string out;
  if (c.id == "zlib" || c.id == "gzip") {
    z_stream z{};
    // windowBits 15: a zlib stream (numcodecs' Zlib); 15 + 16: a gzip one (numcodecs' GZip).
    if (deflateInit2(&z, c.level, Z_DEFLATED, c.id == "gzip" ? 31 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      fail(path, "zlib cannot start");
    out.resize(deflateBound(&z, static_cast<uLong>(in.size())));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) fail(path, "zlib cannot compress a chunk");
  } else if (c.id == "zstd") {
    out.resize(ZSTD_compressBound(in.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), c.level);
    if (ZSTD_isError(n)) fail(path, "zstd cannot compress a chunk: ", ZSTD_getErrorName(n));
    out.resize(n);
  } else {
    out.resize(in.size() + BLOSC_MAX_OVERHEAD);
    const int n = blosc_compress_ctx(c.level, c.shuffle, typesize, in.size(), in.data(), out.data(),
                                     out.size(), c.cname.c_str(), 0, 1);
    if (n <= 0) fail(path, "blosc cannot compress a chunk with '", c.cname, "'");
    out.resize(static_cast<size_t>(n));
  }
  return out;
}

Attrs parse_attrs(const std::string& dir, const json& j) {
  Attrs a;
  if (!j.is_object()) fail(dir, ".zattrs is not a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) {
      a[k] = v.get<std::string>();
    } else if (v.is_number()) {
      a[k] = std::vector<double>{v.get<double>()};
    } else if (v.is_array() && !v.empty() &&
               std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number(); })) {
      std::vector<double> n;
      for (const json& e : v) n.push_back(e.get<double>());
      a[k] = std::move(n);
    }  // other kinds (objects, booleans, mixed lists) are left out
  }
  return a;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw Error(cat_str("'", path, "': cannot write"));
}

}  // namespace

ZarrMeta parse_zarr_meta(const std::string& dir, const std::string& zarray, const std::string& zattrs) {
  json j;
  try {
    j = json::parse(zarray);
    ZarrMeta m;
    if (j.value("zarr_format", 0) != 2) fail(dir, "not a zarr v2 array (zarr_format is not 2)");
    const std::string code = j.at("dtype").get<std::string>();
    bool known = false;
    for (const DTypeCode& c : kCodes)
      if (code == c.code) m.dtype = c.dtype, known = true;
    if (!known)
      fail(dir, "dtype '", code,
           "' is not one Tapestry reads ('|b1' '|i1' '|u1' '<i4' '<i8' '<f2' '<f4' '<f8' '<c8' '<c16')");
    for (const json& d : j.at("shape")) {
      if (d.get<int64_t>() < 0) fail(dir, "shape ", j.at("shape").dump(), " has a negative size");
      m.shape.push_back(d.get<int64_t>());
    }
    for (const json& d : j.at("chunks")) {
      if (d.get<int64_t>() < 1) fail(dir, "chunks ", j.at("chunks").dump(), " are not positive");
      m.chunks.push_back(d.get<int64_t>());
    }
    if (m.chunks.size() != m.shape.size())
      fail(dir, "chunks ", j.at("chunks").dump(), " do not match the shape");
    if (static_cast<int>(m.shape.size()) > kMaxDims) fail(dir, "more than ", kMaxDims, " dimensions");
    m.fortran = j.value("order", std::string("C")) == "F";
    if (j.contains("filters") && !j["filters"].is_null() && !j["filters"].empty())
      fail(dir, "filters are not supported (", j["filters"].dump(), ")");
    if (j.contains("compressor") && !j["compressor"].is_null()) {
      const json& c = j["compressor"];
      m.compressor.id = c.at("id").get<std::string>();
      if (m.compressor.id != "zlib" && m.compressor.id != "gzip" && m.compressor.id != "zstd" &&
          m.compressor.id != "blosc")
        fail(dir, "compressor '", m.compressor.id, "' is not supported (zlib, gzip, zstd, blosc)");
    }
    const json& fv = j.value("fill_value", json());
    if (fv.is_number()) m.fill = fv.get<double>();
    if (fv.is_boolean()) m.fill = fv.get<bool>();
    if (fv.is_string())
      m.fill = fv == "NaN"         ? std::numeric_limits<double>::quiet_NaN()
               : fv == "Infinity"  ? HUGE_VAL
               : fv == "-Infinity" ? -HUGE_VAL
                                   : 0;
    const std::string sep = j.value("dimension_separator", std::string("."));
    if (sep != "." && sep != "/") fail(dir, "dimension_separator '", sep, "' is not '.' or '/'");
    m.separator = sep[0];
    if (!zattrs.empty()) m.attrs = parse_attrs(dir, json::parse(zattrs));
    return m;
  } catch (const json::exception& e) {
    fail(dir, "malformed .zarray or .zattrs: ", e.what());
  }
}

ZarrMeta read_zarr_meta(const std::string& dir) {
  const std::optional<std::string> zarray = slurp(dir, dir + "/.zarray");
  if (!zarray) fail(dir, "not a zarr array (no .zarray)");
  return parse_zarr_meta(dir, *zarray, slurp(dir, dir + "/.zattrs").value_or(""));
}

void read_zarr_box(const std::string& dir, const ZarrMeta& m, const poly::Box& box, const View& out) {
  if (box.rank() > 0 && box.empty()) return;
  const int r = box.rank();
  const int esz = dtype_size(m.dtype);
  const int64_t chunk_n = numel(m.chunks);
  // Chunk-local strides in elements (C or F order).
  std::vector<int64_t> cst(static_cast<size_t>(r), 1);
  if (m.fortran)
    for (int d = 1; d < r; ++d) cst[d] = cst[d - 1] * m.chunks[d - 1];
  else
    for (int d = r - 2; d >= 0; --d) cst[d] = cst[d + 1] * m.chunks[d + 1];
  std::vector<int64_t> first(r), last(r), idx(r);
  for (int d = 0; d < r; ++d) {
    first[d] = box.lo[d] / m.chunks[d];
    last[d] = box.hi[d] / m.chunks[d];
    idx[d] = first[d];
  }
  char* obase = static_cast<char*>(out.buf->data());
  while (true) {
    const std::string key = chunk_key(idx, m.separator);
    const std::optional<std::string> raw = slurp(dir, dir + "/" + key);
    std::string data;
    if (raw) {
      stats().bytes_read += raw->size();
      data = decode(dir, key, m.compressor, *raw, static_cast<size_t>(chunk_n * esz));
    }
    // The part of the box in this chunk, element by element (dense along the last C dim).
    std::vector<int64_t> lo(r), hi(r), e(r);
    for (int d = 0; d < r; ++d) {
      lo[d] = std::max(box.lo[d], idx[d] * m.chunks[d]);
      hi[d] = std::min(box.hi[d], (idx[d] + 1) * m.chunks[d] - 1);
      e[d] = lo[d];
    }
    while (true) {
      int64_t co = 0, oo = out.offset;
      for (int d = 0; d < r; ++d) {
        co += (e[d] - idx[d] * m.chunks[d]) * cst[d];
        oo += (e[d] - box.lo[d]) * out.strides[d];
      }
      char* dst = obase + oo * esz;
      // A C-order chunk and a dense output row: the rest of this row in one copy.
      if (raw && r > 0 && !m.fortran && out.strides[r - 1] == 1 && m.dtype != DType::Bool) {
        std::memcpy(dst, data.data() + co * esz, static_cast<size_t>((hi[r - 1] - e[r - 1] + 1) * esz));
        e[r - 1] = hi[r - 1];
      } else if (raw) {
        std::memcpy(dst, data.data() + co * esz, esz);
      } else {
        switch (m.dtype) {
          case DType::F32: *reinterpret_cast<float*>(dst) = static_cast<float>(m.fill); break;
          case DType::F64: *reinterpret_cast<double*>(dst) = m.fill; break;
          case DType::I32: *reinterpret_cast<int32_t*>(dst) = static_cast<int32_t>(m.fill); break;
          case DType::I64: *reinterpret_cast<int64_t*>(dst) = static_cast<int64_t>(m.fill); break;
          case DType::Bool: *reinterpret_cast<bool*>(dst) = m.fill != 0; break;
          case DType::I8: *reinterpret_cast<int8_t*>(dst) = static_cast<int8_t>(m.fill); break;
          case DType::U8: *reinterpret_cast<uint8_t*>(dst) = static_cast<uint8_t>(m.fill); break;
          case DType::F16: *reinterpret_cast<f16*>(dst) = f16(m.fill); break;
          case DType::BF16: *reinterpret_cast<bf16*>(dst) = bf16(m.fill); break;
          case DType::C64: *reinterpret_cast<c64*>(dst) = c64(static_cast<float>(m.fill)); break;
          case DType::C128: *reinterpret_cast<c128*>(dst) = c128(m.fill); break;
        }
      }
      if (m.dtype == DType::Bool) *dst = *dst != 0;
      int d = r - 1;
      for (; d >= 0 && ++e[d] > hi[d]; --d) e[d] = lo[d];
      if (d < 0) break;
    }
    int64_t part = esz;
    for (int d = 0; d < r; ++d) part *= hi[d] - lo[d] + 1;
    note_io_progress(part);
    int d = r - 1;
    for (; d >= 0 && ++idx[d] > last[d]; --d) idx[d] = first[d];
    if (d < 0) break;
  }
}

void check_zarr_dtype(const std::string& path, DType t) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == t) return;
  fail(path, "zarr has no dtype for ", dtype_name(t), " (cast it to f32 first)");
}

bool check_zarr_replaceable(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  const bool exists = fs::exists(st);
  if (exists && !(fs::is_directory(st) && fs::exists(path + "/.zarray")))
    fail(path, "exists and is not a zarr array (a folder holding .zarray); only a zarr array is replaced");
  return exists;
}

void create_zarr(const std::string& dir, const ZarrMeta& m) {
  std::error_code ec;
  fs::remove_all(dir, ec);  // a temporary left by a crashed process with our pid
  if (!fs::create_directory(dir, ec)) fail(dir, "cannot write: ", ec.message());
  json j = {{"zarr_format", 2},   {"shape", m.shape}, {"chunks", m.chunks},        {"order", "C"},
            {"filters", nullptr}, {"fill_value", 0},  {"dimension_separator", "."}};
  for (const DTypeCode& c : kCodes)
    if (c.dtype == m.dtype) j["dtype"] = c.code;
  const ZarrCompressor& comp = m.compressor;
  if (comp.id.empty()) j["compressor"] = nullptr;
  else if (comp.id == "blosc")
    j["compressor"] = {{"id", "blosc"},
                       {"cname", comp.cname},
                       {"clevel", comp.level},
                       {"shuffle", comp.shuffle},
                       {"blocksize", 0}};
  else j["compressor"] = {{"id", comp.id}, {"level", comp.level}};
  write_text(dir + "/.zarray", j.dump(2));
  json ja = json::object();
  for (const auto& [k, a] : m.attrs) {
    if (const std::string* s = std::get_if<std::string>(&a)) ja[k] = *s;
    else if (std::get<std::vector<double>>(a).size() == 1) ja[k] = std::get<std::vector<double>>(a)[0];
    else ja[k] = std::get<std::vector<double>>(a);
  }
  write_text(dir + "/.zattrs", ja.dump(2));
}

void write_zarr_chunk(const std::string& dir, const ZarrMeta& m, const poly::Box& box, const View& v) {
  const int r = static_cast<int>(m.shape.size());
  internal_check(box.rank() == r && v.rank() == r && v.dtype == m.dtype);
  const int esz = dtype_size(m.dtype);
  std::string data(static_cast<size_t>(numel(m.chunks) * esz), '\0');
  std::vector<int64_t> idx(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) idx[d] = box.lo[d] / m.chunks[d];
  if (r == 0) {
    std::memcpy(data.data(), v.byte_ptr(), static_cast<size_t>(esz));
  } else {
    // Row by row (the last dimension is a run in the chunk, and in v when its stride is 1).
    const int64_t run = box.extent(r - 1);
    std::vector<int64_t> e(static_cast<size_t>(r), 0);
    const char* vbase = static_cast<const char*>(v.buf->data());
    while (true) {
      int64_t co = 0, vo = v.offset;
      for (int d = 0; d < r; ++d) {
        co = co * m.chunks[d] + (box.lo[d] - idx[d] * m.chunks[d]) + e[d];
        vo += e[d] * v.strides[d];
      }
      char* dst = data.data() + co * esz;
      if (v.strides[r - 1] == 1 || run == 1) {
        std::memcpy(dst, vbase + vo * esz, static_cast<size_t>(run * esz));
      } else {
        for (int64_t k = 0; k < run; ++k)
          std::memcpy(dst + k * esz, vbase + (vo + k * v.strides[r - 1]) * esz, static_cast<size_t>(esz));
      }
      int d = r - 2;
      for (; d >= 0 && ++e[d] == box.extent(d); --d) e[d] = 0;
      if (d < 0) break;
    }
  }
  const std::string enc = encode(dir, m.compressor, data, static_cast<size_t>(esz));
  write_text(dir + "/" + chunk_key(idx, '.'), enc);
  stats().bytes_written += enc.size();
  note_io_progress(v.numel() * esz);
}

void commit_zarr(const std::string& tmp, const std::string& path, bool exists) {
  if (!exists) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, "cannot write: ", std::strerror(errno));
    return;
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0)
    fail(path, "cannot replace: ", std::strerror(errno));
  std::error_code ec;
  fs::remove_all(tmp, ec);  // now the old store
}

void save_zarr(const std::string& path, const View& v, const std::vector<int64_t>& chunks,
               const ZarrCompressor& comp, const Attrs& attrs) {
  check_zarr_dtype(path, v.dtype);
  const bool exists = check_zarr_replaceable(path);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  std::error_code ec;
  try {
    ZarrMeta m;
    m.dtype = v.dtype;
    m.shape = v.shape;
    m.chunks = chunks;
    m.compressor = comp;
    m.attrs = attrs;
    create_zarr(tmp, m);
    for_each_chunk(m.shape, m.chunks, [&](const poly::Box& b) {
      View part = v;  // the chunk's window of v
      for (int d = 0; d < v.rank(); ++d) {
        part.offset += b.lo[d] * v.strides[d];
        part.shape[d] = b.extent(d);
      }
      write_zarr_chunk(tmp, m, b, part);
    });
    commit_zarr(tmp, path, exists);
  } catch (const Error& e) {
    fs::remove_all(tmp, ec);
    std::string msg = e.what();
    for (size_t at = msg.find(tmp); at != std::string::npos; at = msg.find(tmp, at + path.size()))
      msg.replace(at, tmp.size(), path);
    throw Error(msg);
  }
}

}  // namespace tapestry::io
