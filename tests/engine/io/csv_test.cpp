#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/io/csv.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

namespace {

std::string parse_error(const std::string& text, const CsvOptions& o = {}) {
  try {
    parse_csv("t.csv", text, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("io.csv.parse") {
  CsvOptions o;
  o.dtype = DType::F64;
  const CsvTable t = parse_csv("t.csv", "a,\"b,\"\"c\"\"\"\r\n1,2\n\n3,\n", o);
  CHECK(t.names == std::vector<std::string>{"a", "b,\"c\""});
  REQUIRE(t.value->view().shape == Shape{2, 2});
  CHECK(at(t.value->view(), 0) == 1);
  CHECK(at(t.value->view(), 2) == 3);
  CHECK(std::isnan(at(t.value->view(), 3)));
  o.columns = {std::string("b"), int64_t{0}};
  const CsvTable s = parse_csv("t.csv", "a,b\n1,2\n", o);
  CHECK(s.names == std::vector<std::string>{"b", "a"});
  CHECK(at(s.value->view(), 0) == 2);
}

TEST_CASE("io.csv.header_detection") {
  CHECK(parse_csv("t.csv", "1,2\n3,4\n", {}).value->view().shape == Shape{2, 2});
  CHECK(parse_csv("t.csv", "x,2\n3,4\n", {}).value->view().shape == Shape{1, 2});
  CsvOptions o;
  o.header = false;
  CHECK(parse_error("x,2\n3,4\n", o).find("line 1, column 1: 'x' is not a number") != std::string::npos);
}

TEST_CASE("io.csv.errors") {
  CHECK(parse_error("").find("no rows") != std::string::npos);
  CHECK(parse_error("a,b\n").find("no data rows") != std::string::npos);
  CHECK(parse_error("1,2\n3\n").find("line 2 has 1 fields") != std::string::npos);
  CsvOptions o;
  o.dtype = DType::I32;
  CHECK(parse_error("1\n99999999999\n", o).find("not an i32") != std::string::npos);
  CHECK(parse_error("1.5\n", o).find("not an integer") != std::string::npos);
  o.dtype = DType::Bool;
  CHECK(parse_error("2\n", o).find("not a bool") != std::string::npos);
}

TEST_CASE("io.csv.write_round_trip") {
  TempDir d;
  auto v = iota(DType::F32, {4, 3});
  v->data<float>()[5] = 0.1f;  // shortest text still reads back to the same float
  write_csv(d.path("x.csv"), v->view(), ',', {"a", "b", "c"});
  CsvOptions o;
  const CsvTable t = read_csv(d.path("x.csv"), o);
  CHECK(t.names == std::vector<std::string>{"a", "b", "c"});
  for (int64_t i = 0; i < 12; ++i) CHECK(at(t.value->view(), i) == at(v->view(), i));
}
