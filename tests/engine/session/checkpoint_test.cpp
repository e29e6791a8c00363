#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "engine/run/evaluator.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/io/manifest.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "tests/engine/io/io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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
  m.tensors.push_back({"w", "w.npy", DType::F32, {3, 4}, 48});
  m.tensors.push_back({"s", "s.npy", DType::Bool, {}, 1});
  const std::string text = manifest_json(m);
  CHECK(text.find("\"format\": \"tapestry-env\"") != std::string::npos);
  CHECK(text.find("\"shape\": [3, 4]") != std::string::npos);
  const Manifest back = parse_manifest("m.json", text);
  CHECK(back.tensors == m.tensors);
  // Other key orders, whitespace and unknown keys are fine.
  const Manifest other = parse_manifest(
      "m.json", R"({ "tensors" : [ {"bytes":8,"shape":[2],"dtype":"i32","file":"x.npy",
                   "name":"x","extra":{"a":[1,true,null]}} ], "version":1, "format":"tapestry-env",
                   "note": "caf\u00e9" })");
  REQUIRE(other.tensors.size() == 1);
  CHECK(other.tensors[0] == ManifestEntry{"x", "x.npy", DType::I32, {2}, 8});
}

TEST_CASE("engine.io.manifest.bad_manifests_name_the_file") {
  const char* cases[][2] = {
      {"", "expected a JSON value"},
      {"[]", "not a JSON object"},
      {"{\"format\": \"other\", \"version\": 1, \"tensors\": []}", "not a Tapestry checkpoint"},
      {"{\"format\": \"tapestry-env\", \"version\": 2, \"tensors\": []}", "version 2"},
      {"{\"format\": \"tapestry-env\", \"version\": 1}", "lacks \"tensors\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": \"x\"}]}",
       "entry 1 lacks \"file\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": \"x\", \"file\": "
       "\"x.npy\", \"dtype\": \"f16\", \"shape\": [1], \"bytes\": 2}]}",
       "unknown dtype \"f16\""},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": \"x\", \"file\": "
       "\"x.npy\", \"dtype\": \"f32\", \"shape\": [1.5], \"bytes\": 2}]}",
       "should be an integer"},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": [{\"name\": \"x\", \"file\": "
       "\"x.npy\", \"dtype\": \"f32\", \"shape\": [0], \"bytes\": 0}]}",
       "non-positive size"},
      {"{\"format\": \"tapestry-env\", \"version\": 1, \"tensors\": []", "expected '}'"},
      {"{\"format\": \"tapestry-env\"} trailing", "unexpected text"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "nested too deeply"},
  };
  for (const auto& c : cases) {
    CAPTURE(c[0]);
    const std::string msg = error_of([&] { parse_manifest("dir/manifest.json", c[0]); });
    CHECK(msg.find("'dir/manifest.json': ") == 0);
    CHECK(msg.find(c[1]) != std::string::npos);
  }
}

TEST_CASE("engine.session.checkpoint.round_trip") {
  TempDir d;
  const std::string dir = d.path("nested/ckpt");  // created with its parents
  Environment e;
  fill(e);
  const auto saved = save_env(dir, e);
  CHECK(saved == std::vector<std::string>{"a", "b", "c", "d", "flags", "later"});
  CHECK_FALSE(e.has_pending());
  CHECK(std::filesystem::exists(dir + "/manifest.json"));
  CHECK(read_npy_header(dir + "/later.npy").shape == Shape{2, 3});
  for (const auto& entry : std::filesystem::directory_iterator(dir))  // no temporaries left
    CHECK(entry.path().filename().string().find("partial") == std::string::npos);

  Environment f;
  f.bind("other", source(DType::F32, {1}));
  const auto loaded = load_env(dir, f);
  CHECK(loaded == saved);
  for (const std::string& n : saved) {
    CAPTURE(n);
    check_same(f.get(n), e.get(n));
  }
  CHECK(f.get("other") != nullptr);  // names not in the checkpoint are kept
  CHECK_FALSE(f.has_pending());

  // Saving again over the same directory replaces the files.
  e.bind("a", source(DType::I64, {2}));
  save_env(dir, e);
  Environment g;
  load_env(dir, g);
  check_same(g.get("a"), e.get("a"));
}

TEST_CASE("engine.session.checkpoint.empty_environment") {
  TempDir d;
  Environment e;
  CHECK(save_env(d.dir(), e).empty());
  Environment f;
  CHECK(load_env(d.dir(), f).empty());
  CHECK(f.names().empty());
}

TEST_CASE("engine.session.checkpoint.failed_load_leaves_the_environment_unchanged") {
  TempDir d;
  Environment e;
  fill(e);
  save_env(d.dir(), e);

  Environment f;
  f.bind("a", source(DType::F64, {9}));
  auto before = f.get("a");
  auto check_unchanged = [&] {
    CHECK(f.names() == std::vector<std::string>{"a"});
    CHECK(f.get("a") == before);
  };

  // A truncated file.
  const std::string c = d.path("c.npy");
  const std::string good = read_file(c);
  write_file(c, good.substr(0, good.size() - 1));
  std::string msg = error_of([&] { load_env(d.dir(), f); });
  CHECK(msg.find("'" + c + "': truncated") == 0);
  check_unchanged();

  // A file that disagrees with the manifest.
  save_npy(c, iota(DType::F32, {2, 2, 2})->view());
  msg = error_of([&] { load_env(d.dir(), f); });
  CHECK(msg.find("'" + c + "': holds f32 {2,2,2}, but the manifest says i32 {2,2,2}") == 0);
  check_unchanged();

  // A missing file.
  std::filesystem::remove(c);
  msg = error_of([&] { load_env(d.dir(), f); });
  CHECK(msg.find("'" + c + "': cannot open") == 0);
  check_unchanged();

  // A missing manifest.
  msg = error_of([&] { load_env(d.path("nothing"), f); });
  CHECK(msg.find("manifest.json': cannot open the checkpoint manifest") != std::string::npos);
  check_unchanged();
}

TEST_CASE("engine.session.checkpoint.hostile_manifest_entries") {
  TempDir d;
  Environment f;
  auto with = [&](const std::string& name, const std::string& file) {
    Manifest m;
    m.tensors.push_back({name, file, DType::F32, {1}, 4});
    write_manifest(d.path("manifest.json"), m);
    return error_of([&] { load_env(d.dir(), f); });
  };
  CHECK(with("x", "../x.npy").find("not a plain file name") != std::string::npos);
  CHECK(with("x", "/etc/passwd").find("not a plain file name") != std::string::npos);
  CHECK(with("x", "..").find("not a plain file name") != std::string::npos);
  CHECK(with("1x", "x.npy").find("not a valid tensor name") != std::string::npos);
  Manifest m;
  m.tensors.push_back({"x", "x.npy", DType::F32, {1}, 4});
  m.tensors.push_back({"x", "y.npy", DType::F32, {1}, 4});
  write_manifest(d.path("manifest.json"), m);
  CHECK(error_of([&] { load_env(d.dir(), f); }).find("listed twice") != std::string::npos);
  CHECK(f.names().empty());
}

TEST_CASE("engine.session.checkpoint.save_errors") {
  TempDir d;
  write_file(d.path("file"), "x");
  Environment e;
  e.bind("a", source(DType::F32, {2}));
  CHECK(error_of([&] { save_env(d.path("file"), e); }).find("'" + d.path("file") + "'") == 0);
}
