#include "engine/io/postgres.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <regex>

#include "engine/ir/error.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

// The URL as errors show it: a password is replaced by ***.
std::string shown(const std::string& url) {
  static const std::regex password(R"(^(postgres(ql)?://[^:@/]*):[^@/]*@)");
  return std::regex_replace(url, password, "$1:***@");
}

using Result = std::unique_ptr<PGresult, void (*)(PGresult*)>;

class Connection {
 public:
  explicit Connection(const std::string& url) : url_(url), c_(PQconnectdb(url.c_str()), PQfinish) {
    if (!c_ || PQstatus(c_.get()) != CONNECTION_OK) fail("cannot connect");
    PQsetNoticeProcessor(
        c_.get(), [](void*, const char*) {}, nullptr);  // "table does not exist, skipping"
  }
  [[noreturn]] void fail(const std::string& what) const {
    std::string msg = c_ ? PQerrorMessage(c_.get()) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw Error(cat_str("'", shown(url_), "': ", what, ": ", msg));
  }
  // Runs one statement; a result of another status than `want` is an error saying `what`.
  Result exec(const std::string& sql, ExecStatusType want, const std::string& what) const {
    Result r(PQexecParams(c_.get(), sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0), PQclear);
    if (!r || PQresultStatus(r.get()) != want) fail(what);
    return r;
  }
  std::string quote_id(const std::string& id) const {
    char* q = PQescapeIdentifier(c_.get(), id.c_str(), id.size());
    if (!q) fail(cat_str("cannot quote the name '", id, "'"));
    std::string s(q);
    PQfreemem(q);
    return s;
  }
  PGconn* get() const { return c_.get(); }

 private:
  std::string url_;
  std::unique_ptr<PGconn, void (*)(PGconn*)> c_;
};

// A transaction rolled back unless committed: a failure anywhere leaves the database as it was.
class Transaction {
 public:
  explicit Transaction(const Connection& c) : c_(c) {
    c.exec("BEGIN", PGRES_COMMAND_OK, "cannot start a transaction");
  }
  ~Transaction() {
    if (!done_) PQclear(PQexec(c_.get(), "ROLLBACK"));
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit(const std::string& what) {
    c_.exec("COMMIT", PGRES_COMMAND_OK, what);
    done_ = true;
  }

 private:
  const Connection& c_;
  bool done_ = false;
};

// PostgreSQL's built-in type oids (pg_type.h): the numeric ones.
enum : Oid { kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701, kNumeric = 1700 };

SqlCell cell_of(Oid type, const char* text) {
  switch (type) {
    case kBool: return {SqlCell::Integer, text[0] == 't' ? 1 : 0, 0};
    case kInt2:
    case kInt4:
    case kInt8: return {SqlCell::Integer, std::strtoll(text, nullptr, 10), 0};
    default: return {SqlCell::Real, 0, std::strtod(text, nullptr)};  // float4/8, numeric; NaN, Infinity
  }
}

}  // namespace

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

SqlTable read_postgres(const std::string& url, const std::string& query, DType dtype) {
  const Connection c(url);
  c.exec("BEGIN TRANSACTION READ ONLY", PGRES_COMMAND_OK, "cannot start a transaction");
  // One statement (the extended protocol refuses several) that must not write (READ ONLY).
  const Result r = c.exec(query, PGRES_TUPLES_OK, "the query failed");
  const int ncol = PQnfields(r.get()), nrow = PQntuples(r.get());
  user_check(ncol > 0, "'", shown(url), "': the query returns no columns");
  std::vector<std::string> names;
  std::vector<bool> numeric;
  for (int k = 0; k < ncol; ++k) {
    names.emplace_back(PQfname(r.get(), k));
    const Oid t = PQftype(r.get(), k);
    numeric.push_back(t == kBool || t == kInt2 || t == kInt4 || t == kInt8 || t == kFloat4 || t == kFloat8 ||
                      t == kNumeric);
  }
  std::vector<SqlCell> cells;
  cells.reserve(static_cast<size_t>(nrow) * ncol);
  for (int i = 0; i < nrow; ++i)
    for (int k = 0; k < ncol; ++k)
      cells.push_back(PQgetisnull(r.get(), i, k) || !numeric[k]
                          ? SqlCell{}
                          : cell_of(PQftype(r.get(), k), PQgetvalue(r.get(), i, k)));
  c.exec("COMMIT", PGRES_COMMAND_OK, "cannot end the transaction");
  return sql_table(shown(url), names, numeric, cells, dtype);
}

void write_postgres(const std::string& url, const std::string& table, const View& v,
                    const std::vector<std::string>& names, bool append) {
  const int64_t rows = v.shape[0], cols = v.rank() == 2 ? v.shape[1] : 1;
  const Connection c(url);
  const char* type = v.dtype == DType::F32 || v.dtype == DType::F64 ? " double precision"
                     : v.dtype == DType::Bool                       ? " boolean"
                                                                    : " bigint";
  std::string create =
      "CREATE TABLE " + std::string(append ? "IF NOT EXISTS " : "") + c.quote_id(table) + " (";
  std::string copy = "COPY " + c.quote_id(table) + " (";
  for (int64_t k = 0; k < cols; ++k) {
    create += (k ? ", " : "") + c.quote_id(names[k]) + type;
    copy += (k ? ", " : "") + c.quote_id(names[k]);
  }
  create += ")";
  copy += ") FROM STDIN";
  Transaction tx(c);
  if (!append)
    c.exec("DROP TABLE IF EXISTS " + c.quote_id(table), PGRES_COMMAND_OK,
           cat_str("cannot replace table '", table, "'"));
  c.exec(create, PGRES_COMMAND_OK, cat_str("cannot create table '", table, "'"));
  c.exec(copy, PGRES_COPY_IN, cat_str("cannot copy into table '", table, "'"));
  // COPY's text format: tab-separated, \N for NULL (NaN, as SQLite writes it), rows in batches.
  std::string batch;
  auto flush = [&] {
    if (PQputCopyData(c.get(), batch.data(), static_cast<int>(batch.size())) != 1)
      c.fail(cat_str("cannot copy into table '", table, "'"));
    batch.clear();
  };
  char num[32];
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t at = v.offset + i * v.strides[0] + (v.rank() == 2 ? k * v.strides[1] : 0);
      const void* base = v.buf->data();
      if (k) batch += '\t';
      switch (v.dtype) {
        case DType::F32:
        case DType::F64: {
          const double d = v.dtype == DType::F32 ? static_cast<const float*>(base)[at]
                                                 : static_cast<const double*>(base)[at];
          if (std::isnan(d)) {
            batch += "\\N";
          } else {  // the shortest text that reads back the same double (PostgreSQL reads "inf")
            const std::to_chars_result r = std::to_chars(num, num + sizeof num, d);
            batch.append(num, static_cast<size_t>(r.ptr - num));
          }
          break;
        }
        case DType::I32: batch += std::to_string(static_cast<const int32_t*>(base)[at]); break;
        case DType::I64: batch += std::to_string(static_cast<const int64_t*>(base)[at]); break;
        case DType::Bool: batch += static_cast<const bool*>(base)[at] ? 't' : 'f'; break;
        default: throw InternalError("postgres: a dtype the tables do not hold");  // lang widens or refuses
      }
    }
    batch += '\n';
    if (batch.size() > (1 << 20)) flush();
  }
  if (!batch.empty()) flush();
  if (PQputCopyEnd(c.get(), nullptr) != 1) c.fail(cat_str("cannot copy into table '", table, "'"));
  const Result done(PQgetResult(c.get()), PQclear);
  if (!done || PQresultStatus(done.get()) != PGRES_COMMAND_OK)
    c.fail(cat_str("cannot copy into table '", table, "'"));
  while (PGresult* more = PQgetResult(c.get())) PQclear(more);
  tx.commit(cat_str("cannot commit table '", table, "'"));
  stats().bytes_written += static_cast<uint64_t>(rows * cols * dtype_size(v.dtype));
}

}  // namespace tapestry::io
