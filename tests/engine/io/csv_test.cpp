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

TEST_CASE("io.csv.first_row_checked_at_the_index") {
  TempDir d;
  write_file(d.path("t.csv"), "name,x\nrow 0,1\nrow 1,2\n");
  CHECK(error_of([&] {
          index_csv(d.path("t.csv"), {});
        }).find("line 2, column 'name' (1): 'row 0' is not a number") != std::string::npos);
  write_file(d.path("r.csv"), "1,2\n3,4\n5\n");
  CHECK(error_of([&] { index_csv(d.path("r.csv"), {}); }).find("line 3 has 1 fields, line 1 has 2") !=
        std::string::npos);
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
  const CsvIndex ix = index_csv(d.path("x.csv"), {});
  CHECK(ix.names == std::vector<std::string>{"a", "b", "c"});
  auto back = Value::alloc(DType::F32, {4, 3});
  read_csv_box(d.path("x.csv"), ix, poly::Box::of_shape({4, 3}), back->view());
  for (int64_t i = 0; i < 12; ++i) CHECK(at(back->view(), i) == at(v->view(), i));
}

TEST_CASE("io.csv.index_and_boxes") {
  // 5000 rows (a header, quoted line breaks, CR LF, blank lines): the index keeps at most 2048
  // places, and any box parses to the same values as the whole table.
  TempDir d;
  std::string text = "id,\"note\nwith a break\",x\r\n";
  for (int i = 0; i < 5000; ++i) {
    text += std::to_string(i) + (i % 7 == 0 ? ",\"a,\nb\"\"\"," : ",plain,") + std::to_string(i * 0.5) + "\n";
    if (i % 1000 == 0) text += "\n";
  }
  write_file(d.path("t.csv"), text);
  CsvOptions o;
  o.columns = {std::string("x"), int64_t{0}};
  o.dtype = DType::F64;
  const CsvIndex ix = index_csv(d.path("t.csv"), o);
  CHECK(ix.rows == 5000);
  CHECK(ix.header);
  CHECK(ix.keep == std::vector<int64_t>{2, 0});
  CHECK(ix.offsets.size() <= 2048);
  CHECK(ix.stride > 1);
  CHECK(CsvIndex::decode(ix.encode()).offsets == ix.offsets);
  CHECK(CsvIndex::decode(ix.encode()).names == ix.names);
  for (const poly::Box& b : {poly::Box({0, 0}, {0, 1}), poly::Box({4321, 1}, {4999, 1}),
                             poly::Box({17, 0}, {2500, 1}), poly::Box::of_shape({5000, 2})}) {
    auto out = Value::alloc(DType::F64, b.extents());
    read_csv_box(d.path("t.csv"), ix, b, out->view());
    for (int64_t r = b.lo[0]; r <= b.hi[0]; ++r)
      for (int64_t c = b.lo[1]; c <= b.hi[1]; ++c)
        CHECK(at(out->view(), (r - b.lo[0]) * b.extent(1) + (c - b.lo[1])) == (c == 0 ? r * 0.5 : double(r)));
  }
  // A bad field past the first row is found by the box that parses it, naming line and column.
  text += "5000,x,oops\n";
  write_file(d.path("bad.csv"), text);
  const CsvIndex bad = index_csv(d.path("bad.csv"), o);
  auto one = Value::alloc(DType::F64, {1, 2});
  read_csv_box(d.path("bad.csv"), bad, poly::Box({0, 0}, {0, 1}), one->view());  // the first row is fine
  CHECK(error_of([&] {
          read_csv_box(d.path("bad.csv"), bad, poly::Box({5000, 0}, {5000, 1}), one->view());
        }).find("line 5723, column 'x' (3): 'oops' is not a number") != std::string::npos);
}
