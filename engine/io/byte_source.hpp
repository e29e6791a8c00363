// Bytes by range from a local file or an http:// / https:// URL, so a rank reading a slice of a
// .npy, safetensors or zarr array fetches only that slice (libcurl, HTTP Range requests).
//   auto s = open_bytes("http://host/w.npy");  s->size();  s->read_at(buf, 64, 0);
//   s->read_runs(runs);        // many small ranges: a URL merges near ones into few requests
//   std::optional<std::string> z = read_object("http://host/a.zarr/.zarray");  // nullopt: absent
// Every failure is a tapestry::Error whose message starts with the quoted path or URL.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tapestry::io {

bool is_url(const std::string& path);  // http:// or https://

// n bytes at `offset` of the source go to `dst`.
struct ByteRun {
  int64_t offset;
  int64_t bytes;
  char* dst;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual int64_t size() const = 0;
  // Exactly n bytes at off; a source that ends first is "truncated".
  virtual void read_at(char* dst, size_t n, int64_t off) const = 0;
  // Every run (in any order). A URL fetches runs less than 64 KiB apart in one request.
  virtual void read_runs(std::vector<ByteRun> runs) const;
};

// A regular file, or a URL (whose size comes from a HEAD request).
std::unique_ptr<ByteSource> open_bytes(const std::string& path);

// A whole file or URL, or nullopt when it does not exist (ENOENT, HTTP 404).
std::optional<std::string> read_object(const std::string& path);

// What identifies one version of a file: modification time, size and inode (a URL: its
// Last-Modified time, Content-Length, and a hash of its ETag).
struct Stamp {
  int64_t mtime_ns = 0, bytes = 0, inode = 0;
  bool operator==(const Stamp&) const = default;
};
Stamp stamp_of(const std::string& path);

}  // namespace tapestry::io
