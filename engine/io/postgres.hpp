// PostgreSQL through libpq, for tp.load_sql / tp.save_sql with a postgresql:// URL (sql.hpp
// dispatches here): the same calls and semantics as SQLite's.
//   SqlTable t = read_postgres("postgresql://me@db:5432/runs", "SELECT step, loss FROM log", DType::F32);
//   write_postgres("postgresql://me@db/runs", "weights", v, {"a", "b"}, /*append=*/false);
// A read is one statement (libpq's extended protocol refuses more) in a READ ONLY transaction;
// numeric columns are smallint, integer, bigint, real, double precision, numeric and boolean.
// A write is one transaction (DROP, CREATE, COPY, COMMIT): readers never see half a table.
// Errors name the URL without its password.
#pragma once

#include <string>
#include <vector>

#include "engine/io/sql.hpp"

namespace tapestry::io {

bool is_postgres_url(const std::string& db);  // postgresql:// or postgres://

SqlTable read_postgres(const std::string& url, const std::string& query, DType dtype);
void write_postgres(const std::string& url, const std::string& table, const View& v,
                    const std::vector<std::string>& names, bool append);

}  // namespace tapestry::io
