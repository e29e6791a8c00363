#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/io/sql.hpp"
#include "engine/ir/error.hpp"
#include "io_test_util.hpp"

using namespace tapestry;
using namespace tapestry::io;
using namespace tapestry::io_test;

TEST_CASE("io.sql.round_trip") {
  TempDir d;
  const std::string db = d.path("t.db");
  auto v = iota(DType::F64, {4, 2});
  v->data<double>()[3] = NAN;
  write_sql(db, "t", v->view(), {"a", "b"}, false);
  const SqlTable t = read_sql(db, "SELECT a, b, 'x' AS s FROM t", DType::F64);
  CHECK(t.names == std::vector<std::string>{"a", "b"});
  CHECK(t.skipped == std::vector<std::string>{"s"});
  REQUIRE(t.value->view().shape == Shape{4, 2});
  for (int64_t i = 0; i < 8; ++i)
    if (i == 3) CHECK(std::isnan(at(t.value->view(), i)));
    else CHECK(at(t.value->view(), i) == at(v->view(), i));
  write_sql(db, "t", v->view(), {"a", "b"}, true);
  CHECK(read_sql(db, "SELECT count(*) FROM t", DType::I64).value->data<int64_t>()[0] == 8);
}

TEST_CASE("io.sql.errors") {
  TempDir d;
  const std::string db = d.path("t.db");
  CHECK(error_of([&] { read_sql(db, "SELECT 1", DType::F32); }).find("cannot open the database") !=
        std::string::npos);
  auto v = iota(DType::I32, {3});
  write_sql(db, "t", v->view(), {"c1"}, false);
  CHECK(error_of([&] { read_sql(db, "SELECT 2.5", DType::I32); }).find("holds 2.5, not an integer") !=
        std::string::npos);
  CHECK(error_of([&] { read_sql(db, "SELECT 3000000000", DType::I32); }).find("outside i32") !=
        std::string::npos);
  CHECK(error_of([&] { read_sql(db, "INSERT INTO t VALUES (1)", DType::I32); }).find("would change") !=
        std::string::npos);
  CHECK(error_of([&] { write_sql(db, "t", v->view(), {"nope"}, true); }).find("cannot insert") !=
        std::string::npos);
  CHECK(read_sql(db, "SELECT count(*) FROM t", DType::I64).value->data<int64_t>()[0] == 3);
}
