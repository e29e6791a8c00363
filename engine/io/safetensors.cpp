// safetensors headers: parsing, validating and laying out (safetensors.hpp).
#include "engine/io/safetensors.hpp"

#include "engine/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "engine/ir/error.hpp"

namespace tapestry::io {

namespace {

using json = nlohmann::json;

// The reference implementation refuses headers over 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeader = 100'000'000;

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

struct DTypeName {
  DType dtype;
  const char* name;
};
// safetensors has no complex dtype: c64 and c128 are refused when written.
constexpr DTypeName kDTypes[] = {{DType::F32, "F32"},   {DType::F64, "F64"},   {DType::I32, "I32"},
                                 {DType::I64, "I64"},   {DType::Bool, "BOOL"}, {DType::F16, "F16"},
                                 {DType::BF16, "BF16"}, {DType::I8, "I8"},     {DType::U8, "U8"}};

const char* st_name(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t) return d.name;
  throw Error(
      cat_str("safetensors has no dtype for ", dtype_name(t), " (save the parts: x:real() and x:imag())"));
}

void write_exact(const std::string& path, int fd, const char* p, size_t n, int64_t off) {
  while (n > 0) {
    const ssize_t k = ::pwrite(fd, p, n, off);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) fail(path, "write failed: ", std::strerror(errno));
    p += k;
    n -= static_cast<size_t>(k);
    off += k;
  }
}

}  // namespace

SafetensorsFile parse_safetensors_header(const std::string& path, const std::string& text, int64_t header_end,
                                         int64_t data_bytes) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(path, "not a safetensors file: the header is not JSON (", e.what(), ")");
  }
  if (!j.is_object()) fail(path, "not a safetensors file: the header is not a JSON object");
  SafetensorsFile f;
  for (const auto& [name, e] : j.items()) {
    if (name == "__metadata__") {
      if (!e.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [k, v] : e.items()) {
        if (!v.is_string()) fail(path, "__metadata__ '", k, "' is not a string");
        f.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const auto&... why) { fail(path, "tensor '", name, "': ", why...); };
    if (!e.is_object()) bad("not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) bad("no dtype string");
    if (!e.contains("shape") || !e["shape"].is_array()) bad("no shape list");
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      bad("no data_offsets [begin, end]");
    const std::string dt = e["dtype"].get<std::string>();
    SafetensorsEntry t;
    t.name = name;
    bool known = false;
    for (const DTypeName& d : kDTypes)
      if (dt == d.name) t.header.dtype = d.dtype, known = true;
    if (!known) bad("dtype ", dt, " is not one Tapestry has (F32, F64, I32, I64, BOOL, F16, BF16, I8, U8)");
    if (e["shape"].size() > static_cast<size_t>(kMaxDims)) bad("more than ", kMaxDims, " dimensions");
    int64_t numel = 1;
    for (const json& d : e["shape"]) {
      if (!d.is_number_unsigned()) bad("a shape entry is not a non-negative integer");
      const uint64_t n = d.get<uint64_t>();
      // A size 0 is an empty tensor (numel 0 from here on: no later size can overflow it).
      if (numel > 0 && n > static_cast<uint64_t>(INT64_MAX / 16 / numel))
        bad("shape ", e["shape"].dump(), " overflows");
      numel *= static_cast<int64_t>(n);
      t.header.shape.push_back(static_cast<int64_t>(n));
    }
    const json& off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) bad("data_offsets are not integers");
    const uint64_t b = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    const uint64_t want = static_cast<uint64_t>(numel * dtype_size(t.header.dtype));
    if (end < b || end - b != want)
      bad("data_offsets [", b, ", ", end, "] hold ", end < b ? 0 : end - b, " bytes, shape ",
          shape_str(t.header.shape), " ", dt, " needs ", want);
    if (end > static_cast<uint64_t>(data_bytes))
      bad("truncated: its data ends at byte ", end, " of the data section, which holds ", data_bytes,
          " bytes");
    t.header.data_offset = header_end + static_cast<int64_t>(b);
    f.tensors.push_back(std::move(t));
  }
  std::sort(f.tensors.begin(), f.tensors.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.header.data_offset < b.header.data_offset;
  });
  for (size_t i = 1; i < f.tensors.size(); ++i) {
    const NpyHeader& prev = f.tensors[i - 1].header;
    if (prev.data_offset + prev.data_bytes() > f.tensors[i].header.data_offset)
      fail(path, "tensors '", f.tensors[i - 1].name, "' and '", f.tensors[i].name, "' overlap");
  }
  return f;
}

SafetensorsFile read_safetensors_header(const std::string& path) {
  const std::unique_ptr<ByteSource> src = open_bytes(path);  // a file or a URL
  const int64_t size = src->size();
  if (size < 8) fail(path, "not a safetensors file: ", size, " bytes, shorter than the header length");
  unsigned char len[8];
  src->read_at(reinterpret_cast<char*>(len), 8, 0);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len[i];
  if (n > kMaxHeader)
    fail(path, "not a safetensors file: a header of ", n, " bytes (at most ", kMaxHeader, ")");
  if (static_cast<int64_t>(n) > size - 8)
    fail(path, "truncated: the header needs ", n, " bytes, the file has ", size - 8);
  std::string text(n, '\0');
  src->read_at(text.data(), n, 8);
  const int64_t header_end = 8 + static_cast<int64_t>(n);
  return parse_safetensors_header(path, text, header_end, size - header_end);
}

SafetensorsLayout safetensors_layout(const std::vector<SafetensorsSpec>& specs,
                                     const std::map<std::string, std::string>& metadata) {
  json j = json::object();
  if (!metadata.empty()) j["__metadata__"] = metadata;
  int64_t at = 0;
  std::vector<std::pair<int64_t, int64_t>> offsets;
  for (const SafetensorsSpec& s : specs) {
    const int64_t bytes = numel(s.shape) * dtype_size(s.dtype);
    j[s.name] = {{"dtype", st_name(s.dtype)}, {"shape", s.shape}, {"data_offsets", {at, at + bytes}}};
    offsets.emplace_back(at, bytes);
    at += bytes;
  }
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writes
  SafetensorsLayout l;
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) l.header.push_back(static_cast<char>(n >> (8 * i) & 0xff));
  l.header += text;
  const int64_t header_end = static_cast<int64_t>(l.header.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    SafetensorsEntry e;
    e.name = specs[i].name;
    e.header.dtype = specs[i].dtype;
    e.header.shape = specs[i].shape;
    e.header.data_offset = header_end + offsets[i].first;
    l.tensors.push_back(std::move(e));
  }
  l.file_bytes = header_end + at;
  return l;
}

void create_safetensors(const std::string& path, const SafetensorsLayout& layout) {
  int fd;
  do fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(path, "cannot open for writing: ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  write_exact(path, fd, layout.header.data(), layout.header.size(), 0);
  if (::ftruncate(fd, layout.file_bytes) != 0) fail(path, "cannot size the file: ", std::strerror(errno));
}

}  // namespace tapestry::io
