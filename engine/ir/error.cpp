#include "engine/ir/error.hpp"

#include <new>

namespace tapestry {

void internal_fail(const char* file, int line, const char* what) {
  throw InternalError(
      cat_str("internal error at ", file, ":", line, ": ", what, " (please report this bug)"));
}

std::string quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u == 0) out += "\\0";
    else if (u < 0x20 || u == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else out += c;
  }
  return out + "'";
}

std::string on_rank(int rank, const std::string& msg) {
  const std::string prefix = cat_str("rank ", rank, ": ");
  return msg.rfind(prefix, 0) == 0 ? msg : prefix + msg;
}

Failure current_failure(int rank) {
  Failure f;
  try {
    throw;
  } catch (const Cancelled& e) {
    f.kind = Failure::Cancelled;
    f.message = e.what();
  } catch (const Error& e) {
    f.kind = Failure::User;
    f.message = e.what();
  } catch (const std::bad_alloc&) {
    f.kind = Failure::User;
    f.message = "out of memory";
  } catch (const std::exception& e) {
    f.message = e.what();
  }
  f.message = on_rank(rank, f.message);
  return f;
}

void rethrow(const Failure& f) {
  switch (f.kind) {
    case Failure::Cancelled: throw Cancelled();
    case Failure::Internal: throw InternalError(f.message);
    case Failure::User: break;
  }
  throw Error(f.message);
}

}  // namespace tapestry
