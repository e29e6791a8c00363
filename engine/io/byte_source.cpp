#include "engine/io/byte_source.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>

#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"

namespace tapestry::io {

namespace {

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

// Large reads go in pieces of this size, each reported to the progress bar.
constexpr size_t kPiece = size_t(16) << 20;

class LocalFile final : public ByteSource {
 public:
  // progress: report the bytes read to the progress bar (tensor data, not metadata).
  explicit LocalFile(const std::string& path, bool progress = true) : path_(path), progress_(progress) {
    do fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) fail(path, "cannot open for reading: ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path_, "cannot stat: ", std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(path_, "not a regular file");
    size_ = static_cast<int64_t>(st.st_size);
  }
  ~LocalFile() override { ::close(fd_); }
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  int64_t size() const override { return size_; }
  void read_at(char* p, size_t n, int64_t off) const override {
    while (n > 0) {
      const ssize_t k = ::pread(fd_, p, std::min(n, kPiece), off);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) fail(path_, "read failed: ", std::strerror(errno));
      if (k == 0) fail(path_, "truncated: the data ends at byte ", off, " of the file");
      p += k;
      n -= static_cast<size_t>(k);
      off += k;
      if (progress_) note_io_progress(k);
    }
  }

 private:
  std::string path_;
  bool progress_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// ---- HTTP ----

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Response {
  bool progress = false;  // report the body's bytes to the progress bar as they come
  long status = 0;
  std::string body;
  int64_t length = -1;  // Content-Length of a HEAD
  int64_t mtime = -1;   // Last-Modified, s
  std::string etag;
};

size_t on_body(char* p, size_t size, size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  r->body.append(p, size * n);
  if (r->progress) note_io_progress(static_cast<int64_t>(size * n));
  return size * n;
}

size_t on_header(char* p, size_t size, size_t n, void* user) {
  std::string_view line(p, size * n);
  if (line.size() > 5 && (line.substr(0, 5) == "ETag:" || line.substr(0, 5) == "etag:")) {
    std::string_view v = line.substr(5);
    while (!v.empty() && (v.front() == ' ' || v.back() == '\n' || v.back() == '\r')) {
      if (v.front() == ' ') v.remove_prefix(1);
      else v.remove_suffix(1);
    }
    static_cast<Response*>(user)->etag = std::string(v);
  }
  return size * n;
}

// One request: a HEAD, a GET of the whole object, or a GET of bytes [first, last].
Response request(const std::string& url, bool head, int64_t first = -1, int64_t last = -1) {
  init_curl();
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) fail(url, "cannot start an HTTP request (libcurl)");
  Response r;
  r.progress = first >= 0;  // a range: tensor data
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);  // ranks read from several threads
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled server is an error, not a hang
  curl_easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c.get(), CURLOPT_FILETIME, 1L);
  curl_easy_setopt(c.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c.get(), CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &r);
  if (head) curl_easy_setopt(c.get(), CURLOPT_NOBODY, 1L);
  const std::string range = first >= 0 ? cat_str(first, "-", last) : "";
  if (!range.empty()) curl_easy_setopt(c.get(), CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(c.get());
  if (rc != CURLE_OK) fail(url, "HTTP request failed: ", error[0] ? error : curl_easy_strerror(rc));
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  curl_off_t length = -1, mtime = -1;
  curl_easy_getinfo(c.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  curl_easy_getinfo(c.get(), CURLINFO_FILETIME_T, &mtime);
  r.length = length;
  r.mtime = mtime;
  return r;
}

class Url final : public ByteSource {
 public:
  explicit Url(const std::string& url) : url_(url) {
    const Response r = request(url, true);
    if (r.status == 404) fail(url, "not found (HTTP 404)");
    if (r.status != 200) fail(url, "HTTP status ", r.status);
    if (r.length < 0) fail(url, "the server gives no Content-Length");
    size_ = r.length;
  }
  int64_t size() const override { return size_; }
  void read_at(char* p, size_t n, int64_t off) const override {
    if (n == 0) return;
    if (off + static_cast<int64_t>(n) > size_) fail(url_, "truncated: the data ends at byte ", size_);
    const Response r = request(url_, false, off, off + static_cast<int64_t>(n) - 1);
    // 206: the range. A 200 is the whole object: a server without range requests.
    if (r.status == 200 && off == 0 && static_cast<int64_t>(r.body.size()) >= static_cast<int64_t>(n)) {
      std::memcpy(p, r.body.data(), n);
      return;
    }
    if (r.status != 206)
      fail(url_, "HTTP status ", r.status, " for bytes ", off, "-", off + n - 1,
           r.status == 200 ? " (the server does not answer range requests)" : "");
    if (r.body.size() != n) fail(url_, "bytes ", off, "-", off + n - 1, ": the server sent ", r.body.size());
    std::memcpy(p, r.body.data(), n);
  }
  void read_runs(std::vector<ByteRun> runs) const override {
    constexpr int64_t kGap = 64 << 10, kMaxRequest = 64 << 20;
    std::sort(runs.begin(), runs.end(),
              [](const ByteRun& a, const ByteRun& b) { return a.offset < b.offset; });
    std::string buf;
    for (size_t i = 0; i < runs.size();) {
      size_t j = i + 1;
      int64_t end = runs[i].offset + runs[i].bytes;
      while (j < runs.size() && runs[j].offset - end <= kGap &&
             runs[j].offset + runs[j].bytes - runs[i].offset <= kMaxRequest) {
        end = std::max(end, runs[j].offset + runs[j].bytes);
        ++j;
      }
      buf.resize(static_cast<size_t>(end - runs[i].offset));
      read_at(buf.data(), buf.size(), runs[i].offset);
      for (size_t k = i; k < j; ++k)
        std::memcpy(runs[k].dst, buf.data() + (runs[k].offset - runs[i].offset),
                    static_cast<size_t>(runs[k].bytes));
      i = j;
    }
  }

 private:
  std::string url_;
  int64_t size_ = 0;
};

}  // namespace

bool is_url(const std::string& path) {
  return path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0;
}

void ByteSource::read_runs(std::vector<ByteRun> runs) const {
  for (const ByteRun& r : runs) read_at(r.dst, static_cast<size_t>(r.bytes), r.offset);
}

std::unique_ptr<ByteSource> open_bytes(const std::string& path) {
  if (is_url(path)) return std::make_unique<Url>(path);
  return std::make_unique<LocalFile>(path);
}

std::optional<std::string> read_object(const std::string& path) {
  if (is_url(path)) {
    Response r = request(path, false);
    if (r.status == 404) return std::nullopt;
    if (r.status != 200) fail(path, "HTTP status ", r.status);
    return std::move(r.body);
  }
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail(path, "cannot read: ", std::strerror(errno));
  }
  ::close(fd);
  const LocalFile f(path, false);
  std::string s(static_cast<size_t>(f.size()), '\0');
  f.read_at(s.data(), s.size(), 0);
  return s;
}

Stamp stamp_of(const std::string& path) {
  if (is_url(path)) {
    const Response r = request(path, true);
    if (r.status != 200)
      fail(path, r.status == 404 ? "not found (HTTP 404)" : cat_str("HTTP status ", r.status));
    return {r.mtime * 1'000'000'000, r.length, static_cast<int64_t>(std::hash<std::string>{}(r.etag))};
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, "cannot stat: ", std::strerror(errno));
  return {static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_ino)};
}

}  // namespace tapestry::io
