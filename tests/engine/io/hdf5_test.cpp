#include <doctest/doctest.h>

#include <string>

#include "engine/io/hdf5.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

TEST_CASE("io.hdf5.contiguous_is_raw") {
  TempDir d;
  const std::string p = d.path("c.h5");
  const int64_t offset = create_hdf5(p, "g/x", DType::I32, {5, 4}, {{"units", std::string("K")}}, {});
  CHECK(offset > 0);
  auto v = iota(DType::I32, {5, 4});
  NpyHeader h;
  h.dtype = DType::I32;
  h.shape = {5, 4};
  h.data_offset = offset;
  write_npy_box(p, h, poly::Box({0, 0}, {2, 3}), iota(DType::I32, {3, 4})->view());          // rows 1-3 ...
  write_npy_box(p, h, poly::Box({3, 0}, {4, 3}), v->view().sliced({3, 0}, {1, 1}, {2, 4}));  // ... and 4-5
  const Hdf5Info info = read_hdf5_info(p, "/g/x");
  CHECK(info.raw_offset == offset);
  CHECK(info.chunks.empty());
  CHECK(std::get<std::string>(info.attrs.at("units")) == "K");
  auto back = Value::alloc(DType::I32, {2, 2});
  read_hdf5_box(p, "g/x", poly::Box({3, 1}, {4, 2}), back->view());
  CHECK(at(back->view(), 0) == at(v->view(), 13));
  CHECK(at(back->view(), 3) == at(v->view(), 18));
}

TEST_CASE("io.hdf5.chunked_hyperslab") {
  TempDir d;
  const std::string p = d.path("k.h5");
  auto v = iota(DType::F64, {9, 7});
  save_hdf5(p, "x", v->view(), {{"n", std::vector<double>{1, 2}}}, {4, 3});
  const Hdf5Info info = read_hdf5_info(p, "x");
  CHECK(info.raw_offset == -1);
  CHECK(info.chunks == std::vector<int64_t>{4, 3});
  CHECK(std::get<std::vector<double>>(info.attrs.at("n")) == std::vector<double>{1, 2});
  auto back = Value::alloc(DType::F64, {3, 2});
  read_hdf5_box(p, "x", poly::Box({5, 4}, {7, 5}), back->view());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) CHECK(at(back->view(), i * 2 + j) == at(v->view(), (5 + i) * 7 + 4 + j));
}

TEST_CASE("io.hdf5.errors") {
  TempDir d;
  CHECK(error_of([&] { read_hdf5_info(d.path("none.h5"), "x"); }).find("none.h5") != std::string::npos);
  write_file(d.path("junk"), "junk");
  CHECK(error_of([&] { read_hdf5_info(d.path("junk"), "x"); }).find("not an HDF5 file") != std::string::npos);
  auto v = iota(DType::F32, {2});
  save_hdf5(d.path("a.h5"), "x", v->view(), {}, {});
  CHECK(error_of([&] { read_hdf5_info(d.path("a.h5"), "y"); }).find("dataset 'y': no such dataset") !=
        std::string::npos);
  CHECK(error_of([&] { create_hdf5(d.path("a.h5"), "x", DType::F32, {2}, {}, {}); }).find("cannot create") !=
        std::string::npos);
}

TEST_CASE("io.hdf5.chunked_parts_written_raw") {
  // Two writers, each its own rows, cutting through chunks: the file reads back whole.
  TempDir d;
  const std::string p = d.path("parts.h5");
  auto v = iota(DType::I64, {11, 5});
  create_hdf5(p, "g/x", DType::I64, {11, 5}, {}, {4, 3});
  const View all = v->view();
  View top = all, bottom = all;
  top.shape = {6, 5};
  bottom.shape = {5, 5};
  bottom.offset = 6 * 5;
  write_hdf5_chunked_box(p, "g/x", poly::Box({6, 0}, {10, 4}), bottom);
  write_hdf5_chunked_box(p, "g/x", poly::Box({0, 0}, {5, 4}), top);
  auto back = Value::alloc(DType::I64, {11, 5});
  read_hdf5_box(p, "g/x", poly::Box::of_shape({11, 5}), back->view());
  for (int64_t i = 0; i < 55; ++i) CHECK(at(back->view(), i) == at(v->view(), i));
  // A strided source (a column block of a wider value) goes through the same runs.
  auto w = iota(DType::I64, {11, 8});
  View cols = w->view();
  cols.shape = {11, 5};
  cols.offset = 2;
  write_hdf5_chunked_box(p, "g/x", poly::Box::of_shape({11, 5}), cols);
  read_hdf5_box(p, "g/x", poly::Box::of_shape({11, 5}), back->view());
  for (int64_t i = 0; i < 11; ++i)
    for (int64_t j = 0; j < 5; ++j) CHECK(at(back->view(), i * 5 + j) == at(w->view(), i * 8 + 2 + j));
  save_hdf5(d.path("c.h5"), "x", v->view(), {}, {});  // contiguous: not for this writer
  CHECK(error_of([&] {
          write_hdf5_chunked_box(d.path("c.h5"), "x", poly::Box({0, 0}, {0, 0}), top);
        }).find("not a chunked, unfiltered dataset") != std::string::npos);
}
