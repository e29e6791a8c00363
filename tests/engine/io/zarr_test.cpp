#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/io/zarr.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

std::string meta_error(const std::string& zarray) {
  try {
    parse_zarr_meta("z", zarray, "");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("io.zarr.meta") {
  const ZarrMeta m =
      parse_zarr_meta("z",
                      R"({"zarr_format": 2, "shape": [10, 7], "chunks": [3, 3], "dtype": "<i8", "order": "F",
          "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}, "fill_value": "NaN",
          "filters": null, "dimension_separator": "/"})",
                      R"({"units": "K", "v": [1, 2], "skip": {"a": 1}})");
  CHECK(m.dtype == DType::I64);
  CHECK(m.shape == Shape{10, 7});
  CHECK(m.chunks == std::vector<int64_t>{3, 3});
  CHECK(m.fortran);
  CHECK(m.compressor.id == "blosc");
  CHECK(std::isnan(m.fill));
  CHECK(m.separator == '/');
  CHECK(std::get<std::string>(m.attrs.at("units")) == "K");
  CHECK(m.attrs.count("skip") == 0);
}

TEST_CASE("io.zarr.meta_errors") {
  CHECK(meta_error(R"({"zarr_format": 3})").find("not a zarr v2 array") != std::string::npos);
  CHECK(meta_error(R"({"zarr_format": 2, "dtype": "<u2", "shape": [2], "chunks": [2]})").find("'<u2'") !=
        std::string::npos);
  CHECK(meta_error(R"({"zarr_format": 2, "dtype": "<f4", "shape": [2, 2], "chunks": [2]})")
            .find("do not match") != std::string::npos);
  CHECK(
      meta_error(
          R"({"zarr_format": 2, "dtype": "<f4", "shape": [2], "chunks": [2], "filters": [{"id": "delta"}]})")
          .find("filters are not supported") != std::string::npos);
  CHECK(meta_error("{").find("malformed") != std::string::npos);
}

TEST_CASE("io.zarr.round_trip_partial_boxes") {
  TempDir d;
  auto v = iota(DType::F32, {11, 6});
  for (const char* comp : {"", "zlib", "gzip", "zstd", "blosc"}) {
    ZarrCompressor c;
    c.id = comp;
    save_zarr(d.path("a.zarr"), v->view(), {4, 5}, c, {});
    const ZarrMeta m = read_zarr_meta(d.path("a.zarr"));
    auto back = Value::alloc(DType::F32, {3, 4});
    read_zarr_box(d.path("a.zarr"), m, poly::Box({3, 1}, {5, 4}), back->view());  // across 4 chunks
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        CHECK(at(back->view(), i * 4 + j) == at(v->view(), (3 + i) * 6 + 1 + j));
  }
}
