// SQLite reading and writing (sql.hpp).
#include "engine/io/sql.hpp"

#include "engine/io/postgres.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <optional>

#include "engine/ir/error.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

// An open connection; every failure names the database.
class Db {
 public:
  Db(const std::string& path, int flags) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      if (!(flags & SQLITE_OPEN_CREATE) && ::access(path.c_str(), F_OK) != 0) why = "no such file";
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(cat_str("'", path, "': cannot open the database: ", why));
    }
    sqlite3_busy_timeout(db_, 5000);  // another writer's transaction: wait for it, a while
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* get() const { return db_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(cat_str("'", path_, "': ", what, ": ", sqlite3_errmsg(db_)));
  }
  void exec(const std::string& sql, const std::string& what) const {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// A prepared statement, finalized on every path.
class Stmt {
 public:
  Stmt(const Db& db, const std::string& sql, const std::string& what, const char** tail = nullptr) {
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), static_cast<int>(sql.size()), &s_, tail) != SQLITE_OK)
      db.fail(what);
    if (!s_) throw Error(cat_str(what, ": the statement is empty"));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// An SQL identifier, quoted: "my ""table""".
std::string quote_id(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

}  // namespace

SqlTable read_sql(const std::string& db_path, const std::string& query, DType dtype) {
  if (is_postgres_url(db_path)) return read_postgres(db_path, query, dtype);
  const Db db(db_path, SQLITE_OPEN_READONLY);
  const char* tail = nullptr;
  const Stmt st(db, query, "the query failed", &tail);
  for (const char* p = tail; p && *p; ++p)
    user_check(std::isspace(static_cast<unsigned char>(*p)) || *p == ';', "'", db_path,
               "': the query holds more than one statement");
  user_check(sqlite3_stmt_readonly(st.get()) != 0, "'", db_path,
             "': the query would change the database (tp.load_sql runs only reading statements)");
  const int ncol = sqlite3_column_count(st.get());
  user_check(ncol > 0, "'", db_path, "': the query returns no columns");
  std::vector<std::string> names(static_cast<size_t>(ncol));
  for (int c = 0; c < ncol; ++c) names[c] = sqlite3_column_name(st.get(), c);
  std::vector<SqlCell> cells;
  std::vector<bool> numeric(static_cast<size_t>(ncol), true);
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    for (int c = 0; c < ncol; ++c) {
      SqlCell cell;
      const int type = sqlite3_column_type(st.get(), c);
      if (type == SQLITE_INTEGER) cell = {SqlCell::Integer, sqlite3_column_int64(st.get(), c), 0};
      if (type == SQLITE_FLOAT) cell = {SqlCell::Real, 0, sqlite3_column_double(st.get(), c)};
      if (type == SQLITE_TEXT || type == SQLITE_BLOB) numeric[c] = false;
      cells.push_back(cell);
    }
  }
  if (rc != SQLITE_DONE) db.fail("the query failed");
  return sql_table(db_path, names, numeric, cells, dtype);
}

SqlTable sql_table(const std::string& db_path, const std::vector<std::string>& names,
                   const std::vector<bool>& numeric, const std::vector<SqlCell>& cells, DType dtype) {
  const int ncol = static_cast<int>(names.size());
  const int64_t rows = static_cast<int64_t>(cells.size()) / ncol;
  SqlTable t;
  std::vector<int> keep;
  for (int c = 0; c < ncol; ++c) {
    if (!numeric[c]) {
      t.skipped.push_back(names[c]);
      continue;
    }
    t.names.push_back(names[c]);
    keep.push_back(c);
  }
  user_check(rows > 0, "'", db_path, "': the query returns no rows");
  if (keep.empty()) {
    std::string all;
    for (const std::string& n : names) {
      if (!all.empty()) all += ", ";
      all += n;
    }
    throw Error(cat_str("'", db_path, "': the query returns no numeric column (columns: ", all, ")"));
  }
  const int64_t kcols = static_cast<int64_t>(keep.size());
  t.value = Value::alloc(dtype, {rows, kcols});
  const View out = t.value->view();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < kcols; ++k) {
      const SqlCell& cell = cells[static_cast<size_t>(r * ncol + keep[k])];
      const int64_t at = r * kcols + k;
      const bool null = cell.type == SqlCell::Null;
      const double d = null                            ? std::numeric_limits<double>::quiet_NaN()
                       : cell.type == SqlCell::Integer ? static_cast<double>(cell.i)
                                                       : cell.d;
      switch (dtype) {
        case DType::F32: out.ptr<float>()[at] = static_cast<float>(d); break;
        case DType::F64: out.ptr<double>()[at] = d; break;
        case DType::Bool:
          user_check(!null, "'", db_path, "': row ", r + 1, ", column '", t.names[k], "' is NULL, which ",
                     dtype_name(dtype), " cannot hold");
          out.ptr<bool>()[at] = d != 0;
          break;
        case DType::I32:
        case DType::I64: {
          user_check(!null, "'", db_path, "': row ", r + 1, ", column '", t.names[k], "' is NULL, which ",
                     dtype_name(dtype), " cannot hold");
          const int64_t i = cell.type == SqlCell::Integer ? cell.i : static_cast<int64_t>(cell.d);
          user_check(cell.type == SqlCell::Integer || static_cast<double>(i) == cell.d, "'", db_path,
                     "': row ", r + 1, ", column '", t.names[k], "' holds ", cell.d, ", not an integer");
          if (dtype == DType::I32) {
            user_check(i >= INT32_MIN && i <= INT32_MAX, "'", db_path, "': row ", r + 1, ", column '",
                       t.names[k], "' holds ", i, ", outside i32");
            out.ptr<int32_t>()[at] = static_cast<int32_t>(i);
          } else {
            out.ptr<int64_t>()[at] = i;
          }
          break;
        }
        default: throw InternalError("sql: a dtype the tables do not hold");  // lang refuses it first
      }
    }
  stats().bytes_read += static_cast<uint64_t>(out.numel() * dtype_size(dtype));
  return t;
}

void write_sql(const std::string& db_path, const std::string& table, const View& v,
               const std::vector<std::string>& names, bool append) {
  internal_check(v.rank() == 1 || v.rank() == 2);
  const int64_t rows = v.shape[0], cols = v.rank() == 2 ? v.shape[1] : 1;
  internal_check(static_cast<int64_t>(names.size()) == cols);
  if (is_postgres_url(db_path)) return write_postgres(db_path, table, v, names, append);
  const Db db(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  const bool real = v.dtype == DType::F32 || v.dtype == DType::F64;
  std::string create = "CREATE TABLE " + std::string(append ? "IF NOT EXISTS " : "") + quote_id(table) + " (";
  std::string insert = "INSERT INTO " + quote_id(table) + " (";
  std::string marks;
  for (int64_t c = 0; c < cols; ++c) {
    const std::string sep = c ? ", " : "";
    create += sep + quote_id(names[c]) + (real ? " REAL" : " INTEGER");
    insert += sep + quote_id(names[c]);
    marks += c ? ", ?" : "?";
  }
  create += ")";
  insert += ") VALUES (" + marks + ")";
  db.exec("BEGIN IMMEDIATE", "cannot start a transaction");
  try {
    if (!append)
      db.exec("DROP TABLE IF EXISTS " + quote_id(table), cat_str("cannot replace table '", table, "'"));
    db.exec(create, cat_str("cannot create table '", table, "'"));
    const Stmt ins(db, insert, cat_str("cannot insert into table '", table, "'"));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t k = v.offset + r * v.strides[0] + (v.rank() == 2 ? c * v.strides[1] : 0);
        const void* base = v.buf->data();
        int rc = SQLITE_OK;
        switch (v.dtype) {
          case DType::F32: {
            const double d = static_cast<const float*>(base)[k];
            rc = std::isnan(d) ? sqlite3_bind_null(ins.get(), int(c + 1))
                               : sqlite3_bind_double(ins.get(), int(c + 1), d);
            break;
          }
          case DType::F64: {
            const double d = static_cast<const double*>(base)[k];
            rc = std::isnan(d) ? sqlite3_bind_null(ins.get(), int(c + 1))
                               : sqlite3_bind_double(ins.get(), int(c + 1), d);
            break;
          }
          case DType::I32:
            rc = sqlite3_bind_int64(ins.get(), int(c + 1), static_cast<const int32_t*>(base)[k]);
            break;
          case DType::I64:
            rc = sqlite3_bind_int64(ins.get(), int(c + 1), static_cast<const int64_t*>(base)[k]);
            break;
          case DType::Bool:
            rc = sqlite3_bind_int64(ins.get(), int(c + 1), static_cast<const bool*>(base)[k]);
            break;
          default: throw InternalError("sql: a dtype the tables do not hold");  // lang widens or refuses
        }
        if (rc != SQLITE_OK) db.fail(cat_str("cannot insert row ", r + 1, " into table '", table, "'"));
      }
      if (sqlite3_step(ins.get()) != SQLITE_DONE)
        db.fail(cat_str("cannot insert row ", r + 1, " into table '", table, "'"));
      sqlite3_reset(ins.get());
    }
    db.exec("COMMIT", cat_str("cannot commit table '", table, "'"));
  } catch (...) {  // roll back, then the same exception goes on (no Lua runs here)
    sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  stats().bytes_written += static_cast<uint64_t>(rows * cols * dtype_size(v.dtype));
}

}  // namespace tapestry::io
