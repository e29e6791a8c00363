#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>

#include "engine/io/manifest.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/session/session.hpp"
#include "tests/engine/io/io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

NodeRef source(DType t, const Shape& s) {
  auto v = iota(t, s);
  return make_source(v, s, t);
}

void check_same(const NodeRef& got, const NodeRef& want) {
  REQUIRE(got != nullptr);
  REQUIRE(got->value != nullptr);
  REQUIRE(want->value != nullptr);
  REQUIRE(got->dtype == want->dtype);
  REQUIRE(got->shape == want->shape);
  for (int64_t i = 0; i < numel(want->shape); ++i)
    REQUIRE(at(got->value->view(), i) == at(want->value->view(), i));
}

// Where the checkpoint in `dir` keeps tensor `name` (its manifest says).
std::string file_of(const std::string& dir, const std::string& name) {
  for (const ManifestEntry& t : read_manifest(dir + "/manifest.json").tensors)
    if (t.name == name) return dir + "/" + t.file;
  return "";
}

// The entries of `dir`, sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) out.push_back(entry.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

// An environment holding a mix: every dtype, a scalar, and a pending binding.
void fill(Environment& e) {
  e.bind("a", source(DType::F32, {3, 4}));
  e.bind("b", source(DType::F64, {5}));
  e.bind("c", source(DType::I32, {2, 2, 2}));
  e.bind("d", source(DType::I64, {}));
  e.bind("flags", source(DType::Bool, {7}));
  e.bind("later", build::full({2, 3}, 1.5, DType::F64));  // computed by save_env
}

}  // namespace

TEST_CASE("engine.io.manifest.json_round_trip") {
  Manifest m;
  m.tensors.push_back({"w", "w.npy", DType::F32, {3, 4}, 48, {}});
  m.tensors.push_back({"s", "s.npy", DType::Bool, {}, 1, {}});
  m.tensors.push_back({"q\"\\\n\x01", "q.npy", DType::I64, {1, 1, 1}, 8, {}});  // escaped on the way out
  const std::string text = manifest_json(m);
  CHECK(text.find("\"format\": \"tapestry-env\"") != std::string::npos);
  CHECK(text.find("\"q\\\"\\\\\\n\\u0001\"") != std::string::npos);
  const Manifest back = parse_manifest("m.json", text);
  CHECK(back.tensors == m.tensors);
  // Other key orders, whitespace and unknown keys are fine.
  const Manifest other =
      parse_manifest("m.json", R"({ "tensors" : [ {"bytes":8,"shape":[2],"dtype":"i32","file":"x.npy",
                   "name":"x","extra":{"a":[1,true,null]}} ], "version":1, "format":"tapestry-env",
                   "note": "caf\u00e9" })");
  REQUIRE(other.tensors.size() == 1);
  CHECK(other.tensors[0] == ManifestEntry{"x", "x.npy", DType::I32, {2}, 8, {}});
}

// Declared properties (docs/properties.md) round-trip with 1-based dims; none: no key.
TEST_CASE("engine.io.manifest.properties_round_trip") {
  Manifest m;
  PropertiesAttrs p;
  p.groups = {{true, {0, 1}}, {false, {2, 3}, true}};
  p.tiles = {2, 2, 1, 1};
  p.nonzero = std::vector<bool>(2 * 2 * 3 * 3, true);
  p.nonzero[5] = false;
  m.tensors.push_back({"a", "a.npy", DType::C64, {4, 4, 3, 3}, 1152, p});
  m.tensors.push_back({"w", "w.npy", DType::F32, {3, 4}, 48, {}});
  const std::string text = manifest_json(m);
  CHECK(text.find("\"kind\": \"hermitian\"") != std::string::npos);
  CHECK(text.find("\"properties\"") == text.rfind("\"properties\""));  // only a's
  CHECK(parse_manifest("m.json", text).tensors == m.tensors);
  const std::string bad[][2] = {
      {R"("properties": 3)", "entry 1 properties should be an object"},
      {R"("properties": {"symmetry": [{"kind": "skew", "dims": [1, 2]}]})", "unknown symmetry kind \"skew\""},
      {R"("properties": {"symmetry": [{"kind": "symmetric", "dims": [0, 1]}]})", "dim 0 is out of range"},
      {R"("properties": {"symmetry": [{"kind": "symmetric"}]})", "lacks \"dims\""},
      {R"("properties": {"tiles": [2], "nonzero": [1]})", "nonzero should hold booleans"},
      {R"("properties": {"tiles": [2]})", "lacks \"nonzero\""},
  };
  for (const auto& c : bad) {
    CAPTURE(c[0]);
    const std::string msg = error_of([&] {
      parse_manifest("m.json",
                     R"({"format": "tapestry-env", "version": 2, "tensors": [{"name": "x", "file": )"
                     R"("x.npy", "dtype": "f32", "shape": [2], "bytes": 8, )" +
                         c[0] + "}]}");
    });
    CHECK(msg.find(c[1]) != std::string::npos);
  }
}

// What the hand-written writer of earlier builds put on disk: it must still load.
TEST_CASE("engine.io.manifest.old_files_load") {
  const std::string text =
      "{\"format\": \"tapestry-env\", \"version\": 1,\n \"tensors\": [\n"
      "  {\"name\": \"w\", \"file\": \"w.npy\", \"dtype\": \"f32\", \"shape\": [3, 4], \"bytes\": 48},\n"
      "  {\"name\": \"s\", \"file\": \"s.npy\", \"dtype\": \"bool\", \"shape\": [], \"bytes\": 1}]}\n";
  const Manifest m = parse_manifest("m.json", text);
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[0] == ManifestEntry{"w", "w.npy", DType::F32, {3, 4}, 48, {}});
  CHECK(m.tensors[1] == ManifestEntry{"s", "s.npy", DType::Bool, {}, 1, {}});
  CHECK(
      parse_manifest("m.json", R"({"format": "tapestry-env", "version": 1, "tensors": []})").tensors.empty());
}

TEST_CASE("engine.io.manifest.bad_manifests_name_the_file") {
  // One entry with `member` in place of the good shape/bytes members.
  auto entry = [](const std::string& member) {
    return R"({"format": "tapestry-env", "version": 1, "tensors": [{"name": "x", "file": "x.npy", "dtype": )" +
           member + "}]}";
  };
  const std::string cases[][2] = {
      {"", "malformed manifest: parse error at line 1, column 1"},
      {"   \n  ", "unexpected end of input"},
      {"[]", "not a JSON object"},
      {"\"tapestry-env\"", "not a JSON object"},
      {"{\"format\": \"other\", \"version\": 1, \"tensors\": []}", "not a Tapestry checkpoint"},
      {"{\"format\": 1, \"version\": 1, \"tensors\": []}", "manifest \"format\" should be a string"},
      {"{\"version\": 1, \"tensors\": []}", "manifest lacks \"format\""},
      {"{\"format\": \"tapestry-env\", \"version\": 3, \"tensors\": []}", "version 3"},
      {"{\"format\": \"tapestry-env\", \"version\": 0, \"tensors\": []}", "version 0"},
      {"{\"format\": \"tapestry-env\", \"version\": \"1\", \"tensors\": []}",
       "manifest version should be an integer, got \"1\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1.0, \"tensors\": []}", "should be an integer, got 1.0"},
      {"{\"format\": \"tapestry-env\", \"version\": 1}", "manifest lacks \"tensors\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": {}}", "\"tensors\" should be an array"},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [1]}",
       "manifest entry 1 should be an object"},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": \"x\"}]}",
       "manifest entry 1 lacks \"file\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": 5}]}",
       "manifest entry 1 \"name\" should be a string"},
      {entry(R"("f128", "shape": [1], "bytes": 2)"), "unknown dtype \"f128\""},
      {entry(R"("f32", "shape": [1.5], "bytes": 2)"), "entry 1 shape should be an integer, got 1.5"},
      {entry(R"("f32", "shape": [-3], "bytes": 0)"), "negative size"},
      {entry(R"("f32", "shape": 3, "bytes": 4)"), "\"shape\" should be an array"},
      {entry(R"("f32", "shape": [1], "bytes": 18446744073709551615)"), "entry 1 bytes should be an integer"},
      {entry(R"("f32", "shape": [1], "bytes": 1e400)"), "malformed manifest"},  // out of double's range
      {entry(R"("f32", "shape": [1], "bytes": NaN)"), "malformed manifest"},
      {entry(R"("f32", "shape": [1])"), "manifest entry 1 lacks \"bytes\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": []", "malformed manifest"},
      {"{\"format\": \"tapestry-env\"} trailing", "malformed manifest"},
      {"{\"format\": \"tapestry-env\",}", "malformed manifest"},
      {"{\"format\": \"tapestry-\xff\"}", "malformed manifest"},  // not UTF-8
      {"{\"format\": \"\\ud800\"}", "malformed manifest"},        // a lone surrogate
      {"{\"format\": \"a\nb\"}", "malformed manifest"},           // a raw control character
      {std::string(100000, '['), "malformed manifest"},
      {std::string("{\0}", 3), "malformed manifest"},
  };
  for (const auto& c : cases) {
    CAPTURE(c[0]);
    const std::string msg = error_of([&] { parse_manifest("dir/manifest.json", c[0]); });
    CHECK(msg.find("'dir/manifest.json': ") == 0);
    CHECK(msg.find(c[1]) != std::string::npos);
    CHECK(msg.find("json.exception") == std::string::npos);  // our words, not the library's id
  }
}

// Deep nesting under a key the reader ignores: neither the parser nor freeing the document recurses.
TEST_CASE("engine.io.manifest.deep_unknown_members_are_ignored") {
  const int depth = 200000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  const Manifest m = parse_manifest(
      "m.json", R"({"format": "tapestry-env", "version": 1, "tensors": [], "x": )" + deep + "}");
  CHECK(m.tensors.empty());
}

TEST_CASE("engine.session.checkpoint.round_trip") {
  TempDir d;
  const std::string dir = d.path("nested/ckpt");  // created with its parents
  Session se{Config{}};
  Environment& e = se.env();
  fill(e);
  const auto saved = save_env(se, dir);
  CHECK(saved == std::vector<std::string>{"a", "b", "c", "d", "flags", "later"});
  CHECK_FALSE(e.has_pending());
  CHECK(std::filesystem::exists(dir + "/manifest.json"));
  CHECK(read_npy_header(file_of(dir, "later")).shape == Shape{2, 3});
  const std::vector<std::string> first = listing(dir);  // the manifest and one folder
  REQUIRE(first.size() == 2);
  CHECK(first[0] == "manifest.json");
  CHECK(first[1].starts_with("v-"));
  CHECK(listing(dir + "/" + first[1]).size() == 6);  // no temporaries left

  Session sf{Config{}};

  Environment& f = sf.env();
  f.bind("other", source(DType::F32, {1}));
  const auto loaded = load_env(sf, dir);
  CHECK(loaded == saved);
  for (const std::string& n : saved) {
    CAPTURE(n);
    check_same(f.get(n), e.get(n));
  }
  CHECK(f.get("other") != nullptr);  // names not in the checkpoint are kept
  CHECK_FALSE(f.has_pending());

  // Saving again over the same directory replaces the files: a new folder, the old one gone.
  e.bind("a", source(DType::I64, {2}));
  save_env(se, dir);
  const std::vector<std::string> second = listing(dir);
  REQUIRE(second.size() == 2);
  CHECK(second[1] != first[1]);
  Session sg{Config{}};
  Environment& g = sg.env();
  load_env(sg, dir);
  check_same(g.get("a"), e.get("a"));
}

TEST_CASE("engine.session.checkpoint.empty_environment") {
  TempDir d;
  Session se{Config{}};
  CHECK(save_env(se, d.dir()).empty());
  Session sf{Config{}};
  CHECK(load_env(sf, d.dir()).empty());
  CHECK(sf.env().names().empty());
}

TEST_CASE("engine.session.checkpoint.failed_load_leaves_the_environment_unchanged") {
  TempDir d;
  Session se{Config{}};
  Environment& e = se.env();
  fill(e);
  save_env(se, d.dir());

  Session sf{Config{}};

  Environment& f = sf.env();
  f.bind("a", source(DType::F64, {9}));
  auto before = f.get("a");
  auto check_unchanged = [&] {
    CHECK(f.names() == std::vector<std::string>{"a"});
    CHECK(f.get("a") == before);
  };

  // A truncated file.
  const std::string c = file_of(d.dir(), "c");
  const std::string good = read_file(c);
  write_file(c, good.substr(0, good.size() - 1));
  std::string msg = error_of([&] { load_env(sf, d.dir()); });
  CHECK(msg.find("'" + c + "': truncated") == 0);
  check_unchanged();

  // A file that disagrees with the manifest.
  save_npy(c, iota(DType::F32, {2, 2, 2})->view());
  msg = error_of([&] { load_env(sf, d.dir()); });
  CHECK(msg.find("'" + c + "': holds f32 {2,2,2}, but the manifest says i32 {2,2,2}") == 0);
  check_unchanged();

  // A missing file.
  std::filesystem::remove(c);
  msg = error_of([&] { load_env(sf, d.dir()); });
  CHECK(msg.find("'" + c + "': cannot open") == 0);
  check_unchanged();

  // A missing manifest.
  msg = error_of([&] { load_env(sf, d.path("nothing")); });
  CHECK(msg.find("manifest.json': cannot open the checkpoint manifest") != std::string::npos);
  check_unchanged();
}

TEST_CASE("engine.session.checkpoint.hostile_manifest_entries") {
  TempDir d;
  Session sf{Config{}};
  Environment& f = sf.env();
  auto with = [&](const std::string& name, const std::string& file) {
    Manifest m;
    m.tensors.push_back({name, file, DType::F32, {1}, 4, {}});
    write_manifest(d.path("manifest.json"), m);
    return error_of([&] { load_env(sf, d.dir()); });
  };
  CHECK(with("x", "../x.npy").find("not a plain file name") != std::string::npos);
  CHECK(with("x", "/etc/passwd").find("not a plain file name") != std::string::npos);
  CHECK(with("x", "..").find("not a plain file name") != std::string::npos);
  CHECK(with("1x", "x.npy").find("not a valid tensor name") != std::string::npos);
  Manifest m;
  m.tensors.push_back({"x", "x.npy", DType::F32, {1}, 4, {}});
  m.tensors.push_back({"x", "y.npy", DType::F32, {1}, 4, {}});
  write_manifest(d.path("manifest.json"), m);
  CHECK(error_of([&] { load_env(sf, d.dir()); }).find("listed twice") != std::string::npos);
  CHECK(f.names().empty());
}

// Files larger than `bytes` cannot be written while it lives (RLIMIT_FSIZE, SIGXFSZ ignored:
// a write past it fails with EFBIG), as on a full disk.
struct FileSizeLimit {
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old);
    old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old;
    r.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &r);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
  }
  rlimit old{};
  void (*old_handler)(int) = nullptr;
};

// A save that fails part way (its second file cannot be written) leaves the previous
// checkpoint whole and loadable, and no new folder; one into a directory that did not exist
// leaves no directory.
TEST_CASE("engine.session.checkpoint.failed_save_keeps_the_previous_checkpoint") {
  TempDir d;
  const std::string dir = d.path("ck");
  Session se{Config{}};
  Environment& e = se.env();
  e.bind("a", source(DType::F32, {2}));
  e.bind("b", source(DType::F64, {3}));
  save_env(se, dir);
  const std::vector<std::string> before = listing(dir);
  e.bind("a", source(DType::I64, {4}));          // written first, fits
  e.bind("b", source(DType::F64, {64 * 1024}));  // 512 KiB: past the limit
  std::string msg;
  {
    FileSizeLimit limit(64 * 1024);
    msg = error_of([&] { save_env(se, dir); });
  }
  CHECK(msg.find("b.npy") != std::string::npos);
  CHECK(listing(dir) == before);
  Session sf{Config{}};
  load_env(sf, dir);
  CHECK(sf.env().get("a")->dtype == DType::F32);  // the old a beside the old b
  CHECK(sf.env().get("b")->shape == Shape{3});

  const std::string fresh = d.path("new/deeper");
  {
    FileSizeLimit limit(64 * 1024);
    CHECK_FALSE(error_of([&] { save_env(se, fresh); }).empty());
  }
  CHECK_FALSE(std::filesystem::exists(d.path("new")));
  CHECK(listing(d.dir()) == std::vector<std::string>{"ck"});
}

// tp.save replaces a regular file and nothing else.
TEST_CASE("engine.io.npy.save_replaces_only_regular_files") {
  TempDir d;
  const auto v = iota(DType::F32, {2});
  save_npy(d.path("plain.npy"), v->view());
  save_npy(d.path("plain.npy"), v->view());  // a regular file: replaced
  std::filesystem::create_symlink(d.path("plain.npy"), d.path("link.npy"));
  CHECK(error_of([&] { save_npy(d.path("link.npy"), v->view()); }).find("is a symbolic link") !=
        std::string::npos);
  CHECK(std::filesystem::is_symlink(d.path("link.npy")));
  REQUIRE(::mkfifo(d.path("fifo").c_str(), 0600) == 0);
  CHECK(error_of([&] { save_npy(d.path("fifo"), v->view()); }).find("is a FIFO") != std::string::npos);
  CHECK(std::filesystem::is_fifo(d.path("fifo")));
  std::filesystem::create_directory(d.path("dir.npy"));
  CHECK(error_of([&] { save_npy(d.path("dir.npy"), v->view()); }).find("is a folder") != std::string::npos);
  CHECK(error_of([&] { save_npy("/dev/null", v->view()); }) ==
        "'/dev/null': exists and is a device; only a regular file is replaced");
}

TEST_CASE("engine.session.checkpoint.save_errors") {
  TempDir d;
  write_file(d.path("file"), "x");
  Session se{Config{}};
  Environment& e = se.env();
  e.bind("a", source(DType::F32, {2}));
  std::string quoted = "'";  // appended piece by piece: GCC 12 warns (-Wrestrict) at "'" + path
  quoted += d.path("file");
  quoted += '\'';
  CHECK(error_of([&] { save_env(se, d.path("file")); }).find(quoted) == 0);
}
