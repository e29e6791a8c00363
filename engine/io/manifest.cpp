// The checkpoint manifest and its tiny JSON reader and writer (manifest.hpp).
#include "engine/io/manifest.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "engine/ir/error.hpp"

namespace tapestry::io {

namespace {

template <class... Args>
[[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

// ---- writing ----

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// ---- reading: a small JSON DOM, enough for the manifest ----

struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  std::string text;  // String: the value; Number: the literal, converted on use
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

class JsonParser {
 public:
  JsonParser(const std::string& path, const std::string& s) : path_(path), s_(s) {}

  Json document() {
    Json v = value(0);
    ws();
    if (i_ != s_.size()) bad("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 32;  // the manifest nests 3 deep; stops hostile recursion

  template <class... Args>
  [[noreturn]] void bad(const Args&... args) {
    fail(path_, "malformed manifest: ", args..., " (at byte ", i_, ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c) {
    ws();
    if (peek() != c) bad("expected '", c, "'");
    ++i_;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) bad("nested too deeply");
    ws();
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::Object;
      ++i_;
      ws();
      if (peek() == '}') return ++i_, v;
      for (;;) {
        ws();
        if (peek() != '"') bad("expected a key");
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (peek() == ',') { ++i_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++i_;
      ws();
      if (peek() == ']') return ++i_, v;
      for (;;) {
        v.items.push_back(value(depth + 1));
        ws();
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::String;
      v.text = string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::Number;
      const size_t start = i_;
      while (i_ < s_.size() && std::strchr("+-0123456789.eE", s_[i_])) ++i_;
      v.text = s_.substr(start, i_ - start);
      return v;
    }
    if (literal("true")) return v.kind = Json::Bool, v.b = true, v;
    if (literal("false")) return v.kind = Json::Bool, v;
    if (literal("null")) return v;
    bad("expected a JSON value");
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) bad("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) bad("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) bad("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) bad("short \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= h - '0';
            else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
            else bad("bad \\u escape");
          }
          if (cp >= 0xd800 && cp <= 0xdfff) bad("surrogate \\u escapes are not supported");
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | cp >> 6);
            out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | cp >> 12);
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default: bad("bad escape '\\", e, "'");
      }
    }
  }

  const std::string& path_;
  const std::string& s_;
  size_t i_ = 0;
};

// ---- typed access, each failure naming the field ----

const Json& field(const std::string& path, const Json& obj, const std::string& key,
                  Json::Kind kind, const std::string& where) {
  static constexpr const char* kKindName[] = {"null", "a boolean", "a number", "a string",
                                              "an array", "an object"};
  const Json* v = obj.get(key);
  if (!v) fail(path, "manifest ", where, " lacks \"", key, "\"");
  if (v->kind != kind) fail(path, "manifest ", where, " \"", key, "\" should be ", kKindName[kind]);
  return *v;
}

int64_t integer(const std::string& path, const Json& v, const std::string& what) {
  if (v.kind != Json::Number) fail(path, "manifest ", what, " should be an integer");
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.text.c_str(), &end, 10);
  if (errno != 0 || end != v.text.c_str() + v.text.size() || v.text.empty())
    fail(path, "manifest ", what, " should be an integer, got ", v.text);
  return static_cast<int64_t>(x);
}

}  // namespace

std::string manifest_json(const Manifest& m) {
  std::string out = cat_str("{\"format\": ", quote(kManifestFormat),
                            ", \"version\": ", kManifestVersion, ",\n \"tensors\": [");
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const ManifestEntry& e = m.tensors[i];
    out += i ? ",\n  " : "\n  ";
    out += cat_str("{\"name\": ", quote(e.name), ", \"file\": ", quote(e.file),
                   ", \"dtype\": ", quote(std::string(dtype_name(e.dtype))), ", \"shape\": [");
    for (size_t d = 0; d < e.shape.size(); ++d) out += (d ? ", " : "") + std::to_string(e.shape[d]);
    out += cat_str("], \"bytes\": ", e.bytes, "}");
  }
  return out + "]}\n";
}

Manifest parse_manifest(const std::string& path, const std::string& text) {
  const Json doc = JsonParser(path, text).document();
  if (doc.kind != Json::Object) fail(path, "malformed manifest: not a JSON object");
  const Json& format = field(path, doc, "format", Json::String, "");
  if (format.text != kManifestFormat)
    fail(path, "not a Tapestry checkpoint manifest (format \"", format.text, "\")");
  const int64_t version = integer(path, field(path, doc, "version", Json::Number, ""), "version");
  if (version != kManifestVersion)
    fail(path, "manifest version ", version, " is not supported (this build reads version ",
         kManifestVersion, ")");
  Manifest m;
  const Json& tensors = field(path, doc, "tensors", Json::Array, "");
  for (size_t i = 0; i < tensors.items.size(); ++i) {
    const Json& t = tensors.items[i];
    const std::string where = cat_str("entry ", i + 1);
    if (t.kind != Json::Object) fail(path, "manifest ", where, " should be an object");
    ManifestEntry e;
    e.name = field(path, t, "name", Json::String, where).text;
    e.file = field(path, t, "file", Json::String, where).text;
    const std::string& dt = field(path, t, "dtype", Json::String, where).text;
    const auto dtype = dtype_from_name(dt);
    if (!dtype) fail(path, "manifest ", where, " has an unknown dtype \"", dt, "\"");
    e.dtype = *dtype;
    const Json& shape = field(path, t, "shape", Json::Array, where);
    for (const Json& s : shape.items) {
      e.shape.push_back(integer(path, s, where + " shape"));
      if (e.shape.back() <= 0) fail(path, "manifest ", where, " has a non-positive size");
    }
    e.bytes = integer(path, field(path, t, "bytes", Json::Number, where), where + " bytes");
    m.tensors.push_back(std::move(e));
  }
  return m;
}

void write_manifest(const std::string& path, const Manifest& m) {
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(path, "cannot write: ", std::strerror(errno));
    f << manifest_json(m);
    f.flush();
    if (!f) {
      ::unlink(tmp.c_str());
      fail(path, "cannot write: ", std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot write: ", std::strerror(err));
  }
}

Manifest read_manifest(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open the checkpoint manifest: ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path, "cannot read the checkpoint manifest");
  return parse_manifest(path, ss.str());
}

}  // namespace tapestry::io
