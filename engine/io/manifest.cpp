// The checkpoint manifest, read and written with nlohmann/json (manifest.hpp).
#include "engine/io/manifest.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/ir/error.hpp"

namespace tapestry::io {

namespace {

using Json = nlohmann::json;

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

// ---- typed access, each failure naming the field ----

const Json& member(const std::string& path, const Json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(path, where, " lacks \"", key, "\"");
  return *it;
}

const std::string& string_member(const std::string& path, const Json& obj, const char* key,
                                 const std::string& where) {
  const Json& v = member(path, obj, key, where);
  if (!v.is_string()) fail(path, where, " \"", key, "\" should be a string");
  return v.get_ref<const std::string&>();
}

const Json& array_member(const std::string& path, const Json& obj, const char* key,
                         const std::string& where) {
  const Json& v = member(path, obj, key, where);
  if (!v.is_array()) fail(path, where, " \"", key, "\" should be an array");
  return v;
}

// JSON keeps integers beyond int64 as unsigned or as doubles: both are refused here.
int64_t integer(const std::string& path, const Json& v, const std::string& what) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    fail(path, what, " should be an integer, got ", v.is_primitive() ? v.dump() : v.type_name());
  return v.get<int64_t>();
}

// "properties" (manifest.hpp): the kinds and fields are checked here, the dims and tiles
// against the tensor's shape where it is declared again (load_env).
PropertiesAttrs properties_of_json(const std::string& path, const Json& p, const std::string& where) {
  const std::string w = where + " properties";
  if (!p.is_object()) fail(path, w, " should be an object");
  PropertiesAttrs out;
  if (p.contains("symmetry"))
    for (const Json& g : array_member(path, p, "symmetry", w)) {
      if (!g.is_object()) fail(path, w, " symmetry groups should be objects");
      const std::string& kind = string_member(path, g, "kind", w + " group");
      if (kind != "symmetric" && kind != "antisymmetric" && kind != "hermitian")
        fail(path, w, " has an unknown symmetry kind \"", kind, "\" (symmetric, antisymmetric, hermitian)");
      SymmetryGroup sg{kind == "antisymmetric", {}, kind == "hermitian"};
      for (const Json& d : array_member(path, g, "dims", w + " group")) {
        const int64_t dim = integer(path, d, w + " dims");
        if (dim < 1 || dim > 64) fail(path, w, " dim ", dim, " is out of range");
        sg.dims.push_back(static_cast<int>(dim - 1));
      }
      out.groups.push_back(std::move(sg));
    }
  if (p.contains("tiles")) {
    for (const Json& t : array_member(path, p, "tiles", w))
      out.tiles.push_back(integer(path, t, w + " tiles"));
    for (const Json& b : array_member(path, p, "nonzero", w)) {
      if (!b.is_boolean()) fail(path, w, " nonzero should hold booleans");
      out.nonzero.push_back(b.get<bool>());
    }
  }
  return out;
}

nlohmann::ordered_json properties_json(const PropertiesAttrs& p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!p.groups.empty()) {
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const SymmetryGroup& g : p.groups) {
      std::vector<int64_t> dims;
      for (int d : g.dims) dims.push_back(d + 1);
      groups.push_back({{"kind", g.herm   ? "hermitian"
                                 : g.anti ? "antisymmetric"
                                          : "symmetric"},
                        {"dims", dims}});
    }
    out["symmetry"] = std::move(groups);
  }
  if (!p.tiles.empty()) {
    out["tiles"] = p.tiles;
    out["nonzero"] = p.nonzero;
  }
  return out;
}

Manifest manifest_of(const std::string& path, const Json& doc) {
  if (!doc.is_object()) fail(path, "malformed manifest: not a JSON object");
  const std::string& format = string_member(path, doc, "format", "manifest");
  if (format != kManifestFormat) fail(path, "not a Tapestry checkpoint manifest (format \"", format, "\")");
  const int64_t version = integer(path, member(path, doc, "version", "manifest"), "manifest version");
  if (version < 1 || version > kManifestVersion)
    fail(path, "manifest version ", version, " is not supported (this build reads versions 1 to ",
         kManifestVersion, ")");
  Manifest m;
  const Json& tensors = array_member(path, doc, "tensors", "manifest");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Json& t = tensors[i];
    const std::string where = cat_str("manifest entry ", i + 1);
    if (!t.is_object()) fail(path, where, " should be an object");
    ManifestEntry e;
    e.name = string_member(path, t, "name", where);
    e.file = string_member(path, t, "file", where);
    const std::string& dt = string_member(path, t, "dtype", where);
    const auto dtype = dtype_from_name(dt);
    if (!dtype) fail(path, where, " has an unknown dtype \"", dt, "\"");
    e.dtype = *dtype;
    for (const Json& s : array_member(path, t, "shape", where)) {
      e.shape.push_back(integer(path, s, where + " shape"));
      if (e.shape.back() < 0) fail(path, where, " has a negative size");
    }
    e.bytes = integer(path, member(path, t, "bytes", where), where + " bytes");
    if (t.contains("properties")) e.properties = properties_of_json(path, t.at("properties"), where);
    m.tensors.push_back(std::move(e));
  }
  return m;
}

}  // namespace

std::string manifest_json(const Manifest& m) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const ManifestEntry& e : m.tensors) {
    tensors.push_back({{"name", e.name},
                       {"file", e.file},
                       {"dtype", dtype_name(e.dtype)},
                       {"shape", e.shape},
                       {"bytes", e.bytes}});
    if (!e.properties.empty()) tensors.back()["properties"] = properties_json(e.properties);
  }
  const nlohmann::ordered_json doc = {
      {"format", kManifestFormat}, {"version", kManifestVersion}, {"tensors", std::move(tensors)}};
  return doc.dump(2) + "\n";
}

Manifest parse_manifest(const std::string& path, const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ...": the id is no help.
    const std::string what = e.what();
    const size_t id_end = what.find("] ");
    fail(path, "malformed manifest: ", id_end == std::string::npos ? what : what.substr(id_end + 2));
  }
  return manifest_of(path, doc);
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
