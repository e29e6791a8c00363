#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

constexpr DType kAll[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};

void check_same(const View& got, const View& want) {
  REQUIRE(got.dtype == want.dtype);
  REQUIRE(got.shape == want.shape);
  for (int64_t i = 0; i < want.numel(); ++i) REQUIRE(at(got, i) == at(want, i));
}

// The message of the Error fn throws ("" when it throws none).

// Every box of a shape, as (lo, hi) per dim.
std::vector<poly::Box> all_boxes(const Shape& s) {
  std::vector<poly::Box> out{poly::Box({}, {})};
  for (int64_t size : s) {
    std::vector<poly::Box> next;
    for (const poly::Box& b : out)
      for (int64_t lo = 0; lo < size; ++lo)
        for (int64_t hi = lo; hi < size; ++hi) {
          poly::Box c = b;
          c.lo.push_back(lo);
          c.hi.push_back(hi);
          next.push_back(c);
        }
    out = std::move(next);
  }
  return out;
}

// Runs a python snippet with numpy imported as np; true on exit status 0.
bool python(const std::string& code) {
  const std::string cmd = "/usr/bin/python3 -c \"import numpy as np, sys\n" + code + "\"";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

TEST_CASE("engine.io.npy.round_trip_every_dtype_and_shape") {
  TempDir d;
  for (DType t : kAll) {
    for (const Shape& s :
         {Shape{}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{1, 1, 1}, Shape{2, 1, 3, 2}}) {
      CAPTURE(dtype_name(t));
      CAPTURE(shape_str(s));
      const std::string p = d.path("a.npy");
      auto v = iota(t, s);
      save_npy(p, v->view());
      const NpyHeader h = read_npy_header(p);
      CHECK(h.dtype == t);
      CHECK(h.shape == s);
      CHECK_FALSE(h.fortran_order);
      CHECK(h.data_offset % 64 == 0);
      CHECK(static_cast<int64_t>(read_file(p).size()) == h.data_offset + h.data_bytes());
      check_same(load_npy(p)->view(), v->view());
    }
  }
}

TEST_CASE("engine.io.npy.header_text_is_numpy_s") {
  const std::string h = npy_header_bytes(DType::F32, {3, 4});
  CHECK(h.size() == 128);  // 10 + 60 + '\n' rounds up to 128, as np.save writes it
  CHECK(h.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(h.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }") == 10);
  CHECK(h.back() == '\n');
  CHECK(npy_header_bytes(DType::Bool, {5}).find("'descr': '|b1'") != std::string::npos);
  CHECK(npy_header_bytes(DType::I64, {5}).find("'shape': (5,)") != std::string::npos);
  CHECK(npy_header_bytes(DType::F64, {}).find("'shape': ()") != std::string::npos);
  CHECK(make_npy_header(DType::F64, {2, 2}).data_offset == 128);
}

TEST_CASE("engine.io.npy.save_reads_strided_views") {
  TempDir d;
  auto v = iota(DType::I32, {3, 4});
  const View t = v->view().permuted({1, 0});  // {4,3}, not contiguous
  save_npy(d.path("t.npy"), t);
  check_same(load_npy(d.path("t.npy"))->view(), t);
}

TEST_CASE("engine.io.npy.every_box_read_matches_the_whole") {
  TempDir d;
  const Shape s{3, 4, 5};
  for (DType t : {DType::F32, DType::Bool}) {
    const std::string p = d.path("whole.npy");
    auto whole = iota(t, s);
    save_npy(p, whole->view());
    const NpyHeader h = read_npy_header(p);
    int n = 0;
    for (const poly::Box& b : all_boxes(s)) {
      CAPTURE(poly::to_string(b));
      std::vector<int64_t> start = b.lo, step(3, 1);
      const View want = whole->view().sliced(start, step, b.extents());
      auto out = Value::alloc(t, b.extents());
      read_npy_box(p, h, b, out->view());
      check_same(out->view(), want);
      if (n++ % 7 == 0) {  // a strided destination too: a permuted view of a buffer
        const Shape e = b.extents();
        auto buf = Value::alloc(t, {e[2], e[1], e[0]});
        const View dst = buf->view().permuted({2, 1, 0});
        read_npy_box(p, h, b, dst);
        check_same(dst, want);
      }
    }
    CHECK(n == 6 * 10 * 15);
  }
}

TEST_CASE("engine.io.npy.every_box_write_lands_in_place") {
  TempDir d;
  const Shape s{3, 4, 5};
  auto whole = iota(DType::I64, s);
  const std::string p = d.path("out.npy");
  for (const poly::Box& b : all_boxes(s)) {
    CAPTURE(poly::to_string(b));
    const NpyHeader h = write_npy_header(p, DType::I64, s);
    std::vector<int64_t> start = b.lo, step(3, 1);
    write_npy_box(p, h, b, whole->view().sliced(start, step, b.extents()));
    auto back = load_npy(p);
    for (int64_t i = 0, flat = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        for (int64_t k = 0; k < s[2]; ++k, ++flat) {
          const bool inside = b.contains_point({i, j, k});
          REQUIRE(back->data<int64_t>()[flat] == (inside ? whole->data<int64_t>()[flat] : 0));
        }
  }
}

TEST_CASE("engine.io.npy.boxes_tile_a_file") {
  // How ranks write: each its own boxes of one file, the header written once.
  TempDir d;
  const Shape s{6, 5};
  auto whole = iota(DType::F64, s);
  const std::string p = d.path("tiled.npy");
  const NpyHeader h = write_npy_header(p, DType::F64, s);
  for (int64_t r = 0; r < 6; r += 2)
    for (int64_t c = 0; c < 5; c += 3) {
      poly::Box b({r, c}, {r + 1, std::min<int64_t>(c + 2, 4)});
      write_npy_box(p, make_npy_header(DType::F64, s), b, whole->view().sliced(b.lo, {1, 1}, b.extents()));
    }
  CHECK(h.data_offset == make_npy_header(DType::F64, s).data_offset);
  check_same(load_npy(p)->view(), whole->view());
}

TEST_CASE("engine.io.npy.scalar_box") {
  TempDir d;
  auto v = iota(DType::F64, {});
  v->data<double>()[0] = 2.5;
  const std::string p = d.path("s.npy");
  const NpyHeader h = write_npy_header(p, DType::F64, {});
  write_npy_box(p, h, poly::Box::of_shape({}), v->view());
  auto out = Value::alloc(DType::F64, {});
  read_npy_box(p, read_npy_header(p), poly::Box::of_shape({}), out->view());
  CHECK(out->data<double>()[0] == 2.5);
}

TEST_CASE("engine.io.npy.fortran_order_reads_transposed") {
  TempDir d;
  // A 2x3 i32 array [[0,1,2],[3,4,5]] stored column-major: 0 3 1 4 2 5.
  std::string f = raw_npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", 0);
  for (int32_t x : {0, 3, 1, 4, 2, 5}) f.append(reinterpret_cast<const char*>(&x), 4);
  write_file(d.path("f.npy"), f);
  auto v = load_npy(d.path("f.npy"));
  REQUIRE(v->view().shape == Shape{2, 3});
  for (int i = 0; i < 6; ++i) CHECK(v->data<int32_t>()[i] == i);
  const NpyHeader h = read_npy_header(d.path("f.npy"));
  CHECK(h.fortran_order);
  auto part = Value::alloc(DType::I32, {2, 2});
  read_npy_box(d.path("f.npy"), h, poly::Box({0, 1}, {1, 2}), part->view());
  CHECK(std::vector<int32_t>(part->data<int32_t>(), part->data<int32_t>() + 4) ==
        std::vector<int32_t>{1, 2, 4, 5});
}

TEST_CASE("engine.io.npy.bools_normalize_nonzero_bytes") {
  TempDir d;
  std::string f = raw_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 0);
  f += std::string("\x00\x02\xff", 3);
  write_file(d.path("b.npy"), f);
  auto v = load_npy(d.path("b.npy"));
  const auto* b = reinterpret_cast<const unsigned char*>(v->data<bool>());
  CHECK(b[0] == 0);
  CHECK(b[1] == 1);
  CHECK(b[2] == 1);
}

TEST_CASE("engine.io.npy.version_2_and_3_headers") {
  TempDir d;
  for (int version : {2, 3}) {
    std::string f = raw_npy("{'shape': (2,), 'fortran_order': False, 'descr': '<f8'}", 0, version);
    for (double x : {1.5, -2.0}) f.append(reinterpret_cast<const char*>(&x), 8);
    write_file(d.path("v.npy"), f);
    auto v = load_npy(d.path("v.npy"));
    CHECK(v->data<double>()[0] == 1.5);
    CHECK(v->data<double>()[1] == -2.0);
  }
}

TEST_CASE("engine.io.npy.hostile_files_are_errors_naming_the_file") {
  TempDir d;
  const std::string p = d.path("bad.npy");
  auto dict = [](const std::string& descr, const std::string& order, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  };
  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  std::string huge_len = raw_npy(dict("<f4", "False", "(1,)"), 4, 2);
  huge_len[8] = huge_len[9] = huge_len[10] = huge_len[11] = '\xff';
  std::string beyond = raw_npy(dict("<f4", "False", "(1,)"), 4);
  beyond[8] = '\x00';
  beyond[9] = '\x10';  // 4096 bytes claimed, far fewer present
  const Case cases[] = {
      {"empty", "", "too short"},
      {"bad magic", "\x93NUMPZ" + raw_npy(dict("<f4", "False", "(1,)"), 4).substr(6), "bad magic"},
      {"text file", "hello, this is not numpy at all", "bad magic"},
      {"version", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + std::string(16, ' '), "version 9.0"},
      {"truncated data", raw_npy(dict("<f4", "False", "(3, 4)"), 47), "truncated"},
      {"truncated header", raw_npy(dict("<f4", "False", "(3, 4)"), 48).substr(0, 30), "truncated"},
      {"header_len beyond file", beyond, "truncated .npy header"},
      {"huge header_len", huge_len, "implausible"},
      {"huge shape overflows", raw_npy(dict("<f8", "False", "(4294967296, 4294967296)"), 8), "overflows"},
      {"huge shape past the file", raw_npy(dict("<f4", "False", "(1099511627776,)"), 8), "truncated"},
      {"size overflows 64 bits", raw_npy(dict("<f4", "False", "(99999999999999999999,)"), 8),
       "overflows 64 bits"},
      {"negative size", raw_npy(dict("<f4", "False", "(-3,)"), 0), "negative size -3"},
      {"big-endian", raw_npy(dict(">f4", "False", "(2,)"), 8), "big-endian"},
      {"complex256", raw_npy(dict("<c32", "False", "(2,)"), 64), "unsupported dtype '<c32'"},
      {"object", raw_npy(dict("|O", "False", "(2,)"), 16), "object arrays"},
      {"uint16", raw_npy(dict("<u2", "False", "(2,)"), 4), "unsupported dtype '<u2'"},
      {"structured", raw_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
       "structured"},
      {"missing key", raw_npy("{'descr': '<f4', 'shape': (2,), }", 8), "needs the keys"},
      {"extra key", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8),
       "unexpected key 'x'"},
      {"twice", raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8),
       "given twice"},
      {"not a dict", raw_npy("[1, 2, 3]", 8), "malformed"},
      {"unterminated", raw_npy("{'descr': '<f4", 8), "unterminated string"},
      {"bad bool", raw_npy(dict("<f4", "Maybe", "(2,)"), 8), "True or False"},
      {"bad shape", raw_npy(dict("<f4", "False", "(2, x)"), 8), "expected a size"},
      {"trailing junk", raw_npy(dict("<f4", "False", "(2,)") + " junk", 8), "after the dict"},
      {"binary header", raw_npy("{'descr': '<f4\x01'}", 8), "printable"},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.what));
    write_file(p, c.bytes);
    const std::string msg = error_of([&] { load_npy(p); });
    CHECK(msg.find("'" + p + "': ") == 0);
    CHECK(msg.find(c.expect) != std::string::npos);
    if (msg.find(c.expect) == std::string::npos) MESSAGE(msg);
  }
  CHECK(error_of([&] { load_npy(d.path("missing.npy")); }).find("cannot open") != std::string::npos);
  CHECK(error_of([&] { load_npy(d.dir()); }).find("not a regular file") != std::string::npos);
}

TEST_CASE("engine.io.npy.too_many_dims") {
  TempDir d;
  std::string shape = "(";
  for (int i = 0; i < 65; ++i) shape += "1, ";
  shape += ")";
  write_file(d.path("r.npy"), raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}", 4));
  CHECK(error_of([&] { load_npy(d.path("r.npy")); }).find("more than 64") != std::string::npos);
}

TEST_CASE("engine.io.npy.save_failure_names_the_path_and_leaves_nothing") {
  TempDir d;
  auto v = iota(DType::F32, {2});
  const std::string p = d.path("no/such/dir/x.npy");
  const std::string msg = error_of([&] { save_npy(p, v->view()); });
  CHECK(msg.find("'" + p + "': cannot open") == 0);
  CHECK(std::filesystem::is_empty(d.dir()));
}

TEST_CASE("engine.io.npy.numpy_reads_ours_and_we_read_numpy_s") {
  if (!has_numpy()) {
    MESSAGE("skipped: /usr/bin/python3 with numpy is not available");
    return;
  }
  TempDir d;
  // Ours, read back by np.load with the values checked.
  for (DType t : kAll) {
    save_npy(d.path(std::string("ours_") + std::string(dtype_name(t)) + ".npy"), iota(t, {3, 4})->view());
  }
  save_npy(d.path("ours_scalar.npy"), iota(DType::F64, {})->view());
  CHECK(python("d = '" + d.dir() +
               "'\n"
               "i = np.arange(12).reshape(3, 4)\n"
               "want = {'bool': i % 3 == 1, 'i32': (i * 7 - 20).astype('<i4'),\n"
               "        'i64': (i * 1000003 - 5).astype('<i8'), 'f32': (i * 0.25 - 1.5).astype('<f4'),\n"
               "        'f64': i / 3.0 - 2}\n"
               "for k, w in want.items():\n"
               "    a = np.load(d + '/ours_' + k + '.npy')\n"
               "    assert a.dtype == w.dtype and a.shape == w.shape, (k, a.dtype, a.shape)\n"
               "    assert (a == w).all(), k\n"
               "s = np.load(d + '/ours_scalar.npy')\n"
               "assert s.shape == () and s == -2.0, s\n"));

  // numpy's, read by us: every dtype, a scalar, a Fortran-order array, version 2.0.
  REQUIRE(python("d = '" + d.dir() +
                 "'\n"
                 "i = np.arange(24).reshape(2, 3, 4)\n"
                 "np.save(d + '/np_f32.npy', (i * 0.5).astype(np.float32))\n"
                 "np.save(d + '/np_f64.npy', i / 7.0)\n"
                 "np.save(d + '/np_i32.npy', (i - 5).astype(np.int32))\n"
                 "np.save(d + '/np_i64.npy', (i * 10**10).astype(np.int64))\n"
                 "np.save(d + '/np_bool.npy', i % 2 == 0)\n"
                 "np.save(d + '/np_scalar.npy', np.float64(3.25))\n"
                 "np.save(d + '/np_fortran.npy', np.asfortranarray((i - 5).astype(np.int32)))\n"
                 "with open(d + '/np_v2.npy', 'wb') as f:\n"
                 "    np.lib.format.write_array(f, i / 7.0, version=(2, 0))\n"));
  auto v = load_npy(d.path("np_f32.npy"));
  REQUIRE(v->view().shape == Shape{2, 3, 4});
  for (int k = 0; k < 24; ++k) {
    CAPTURE(k);
    CHECK(load_npy(d.path("np_f32.npy"))->data<float>()[k] == k * 0.5f);
    CHECK(load_npy(d.path("np_f64.npy"))->data<double>()[k] == k / 7.0);
    CHECK(load_npy(d.path("np_i32.npy"))->data<int32_t>()[k] == k - 5);
    CHECK(load_npy(d.path("np_i64.npy"))->data<int64_t>()[k] == k * 10000000000LL);
    CHECK(load_npy(d.path("np_bool.npy"))->data<bool>()[k] == (k % 2 == 0));
    CHECK(load_npy(d.path("np_fortran.npy"))->data<int32_t>()[k] == k - 5);
    CHECK(load_npy(d.path("np_v2.npy"))->data<double>()[k] == k / 7.0);
  }
  auto s = load_npy(d.path("np_scalar.npy"));
  CHECK(s->view().shape.empty());
  CHECK(s->data<double>()[0] == 3.25);
  CHECK(read_npy_header(d.path("np_fortran.npy")).fortran_order);
}
