// SQL databases: a query's numeric columns as a 2-D tensor, a 2-D tensor as a table. A path
// is a SQLite database file, or a postgresql:// URL (postgres.hpp, through libpq).
//   SqlTable t = read_sql("runs.db", "SELECT step, loss FROM log", DType::F64);
//   write_sql("runs.db", "weights", value.view(), {"a", "b"}, /*append=*/false);
// SQLite (libsqlite3) or PostgreSQL (libpq) does the work. A column is numeric when every value in it is an
// INTEGER, a REAL or NULL (NaN; an error for integer dtypes); the other columns are left out and named in
// SqlTable::skipped. A write is one transaction (DROP, CREATE, INSERTs, COMMIT; or INSERTs into the existing
// table when appending): a failure rolls it back, so readers never see half a table and the previous one
// stays.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::io {

struct SqlTable {
  std::vector<std::string> names;    // of the numeric columns, in the query's order
  std::vector<std::string> skipped;  // columns left out because they hold text or blobs
  std::shared_ptr<Value> value;      // {rows, numeric columns}
};

// One value of a query's result, as either database gives it.
struct SqlCell {
  enum Type : uint8_t { Null, Integer, Real } type = Null;
  int64_t i = 0;
  double d = 0;
};

// The numeric columns of a result of `names.size()` columns (cells row by row) as a tensor of
// `dtype`; the others go to SqlTable::skipped. Errors name `db`, the row and the column.
SqlTable sql_table(const std::string& db, const std::vector<std::string>& names,
                   const std::vector<bool>& numeric, const std::vector<SqlCell>& cells, DType dtype);

// Runs one read-only statement on an existing database.
SqlTable read_sql(const std::string& db, const std::string& query, DType dtype);

// Writes a 1-D (one column) or 2-D value as table `table` (columns `names`, one per column;
// REAL for floats, INTEGER for integers and bools), replacing it or appending to it.
void write_sql(const std::string& db, const std::string& table, const View& v,
               const std::vector<std::string>& names, bool append);

}  // namespace tapestry::io
