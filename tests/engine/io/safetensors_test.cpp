#include <doctest/doctest.h>

#include <string>

#include "engine/io/safetensors.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

// The message of the Error fn throws ("" when it throws none).

std::string parse_error(const std::string& json, int64_t data_bytes) {
  return error_of([&] { parse_safetensors_header("m.st", json, 16, data_bytes); });
}

}  // namespace

TEST_CASE("io.safetensors.parse") {
  const SafetensorsFile f =
      parse_safetensors_header("m.st",
                               R"({"b": {"dtype": "I64", "shape": [2], "data_offsets": [48, 64]},
          "a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
          "__metadata__": {"format": "pt"}})",
                               16, 64);
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].name == "a");  // in the order of their data
  CHECK(f.tensors[0].header.dtype == DType::F32);
  CHECK(f.tensors[0].header.shape == Shape{3, 4});
  CHECK(f.tensors[0].header.data_offset == 16);
  CHECK(f.tensors[1].header.data_offset == 64);
  CHECK(f.metadata.at("format") == "pt");
}

TEST_CASE("io.safetensors.bad_headers") {
  CHECK(parse_error("[1]", 0).find("'m.st': not a safetensors file") == 0);
  CHECK(parse_error("{", 0).find("not JSON") != std::string::npos);
  CHECK(parse_error(R"({"x": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}})", 4)
            .find("tensor 'x': dtype U16 is not one Tapestry has") != std::string::npos);
  CHECK(parse_error(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 8)
            .find("hold 4 bytes, shape {2} F32 needs 8") != std::string::npos);
  CHECK(
      parse_error(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4).find("truncated") !=
      std::string::npos);
  // An empty tensor holds no bytes (docs/empty.md); one that claims some is refused as any other.
  CHECK(parse_error(R"({"x": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}})", 0).empty());
  CHECK(parse_error(R"({"x": {"dtype": "F32", "shape": [0], "data_offsets": [0, 4]}})", 4)
            .find("hold 4 bytes, shape {0} F32 needs 0") != std::string::npos);
  CHECK(parse_error(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "y": {"dtype": "I32", "shape": [1], "data_offsets": [4, 8]}})",
                    8)
            .find("overlap") != std::string::npos);
  CHECK(parse_error(R"({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8)
            .find("non-negative integer") != std::string::npos);
  CHECK(parse_error(R"({"__metadata__": {"k": 1}})", 0).find("not a string") != std::string::npos);
}

TEST_CASE("io.safetensors.layout_round_trip") {
  TempDir d;
  const SafetensorsLayout l =
      safetensors_layout({{"w", DType::F64, {3, 2}}, {"flag", DType::Bool, {5}}}, {{"k", "v"}});
  CHECK(l.header.size() % 8 == 0);
  CHECK(l.file_bytes == static_cast<int64_t>(l.header.size()) + 48 + 5);
  create_safetensors(d.path("x.st"), l);
  CHECK(error_of([&] { create_safetensors(d.path("x.st"), l); }).find("cannot open") != std::string::npos);
  auto v = iota(DType::F64, {3, 2});
  write_npy_box(d.path("x.st"), l.tensors[0].header, poly::Box::of_shape({3, 2}), v->view());
  const SafetensorsFile f = read_safetensors_header(d.path("x.st"));
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].name == "w");
  CHECK(f.tensors[0].header.data_offset == l.tensors[0].header.data_offset);
  CHECK(f.tensors[1].header.data_offset == l.tensors[1].header.data_offset);
  CHECK(f.metadata.at("k") == "v");
  auto back = Value::alloc(DType::F64, {3, 2});
  read_npy_box(d.path("x.st"), f.tensors[0].header, poly::Box::of_shape({3, 2}), back->view());
  for (int64_t i = 0; i < 6; ++i) CHECK(at(back->view(), i) == at(v->view(), i));
}

TEST_CASE("io.safetensors.bad_files") {
  TempDir d;
  write_file(d.path("short"), "abc");
  CHECK(error_of([&] { read_safetensors_header(d.path("short")); }).find("shorter than the header length") !=
        std::string::npos);
  write_file(d.path("huge"), std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}");
  CHECK(error_of([&] { read_safetensors_header(d.path("huge")); }).find("at most") != std::string::npos);
  write_file(d.path("cut"), std::string("\x10\0\0\0\0\0\0\0", 8) + "{}");
  CHECK(error_of([&] { read_safetensors_header(d.path("cut")); }).find("truncated") != std::string::npos);
  CHECK(error_of([&] { read_safetensors_header(d.path("none")); }).find("cannot open") != std::string::npos);
}
