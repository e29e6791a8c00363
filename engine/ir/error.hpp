// Errors that cross from C++ into Lua.
//   user_check(shape.size() == 2, "expects a 2-D tensor, got ", shape_str(s));
//   internal_check(node != nullptr);            // "internal error at file:line"
// The Lua binding layer prefixes the public function name ("tp.matmul: ...").
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tapestry {

// A mistake the user can fix: bad shape, dtype, option, argument.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A tensor allocation refused because it would pass the memory budget (engine/ir/value.hpp),
// before anything was allocated: a user error, as a request too large for the machine.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& msg) : Error(msg) {}
};

// A device allocation refused: the GPU (or the simulated device) is full. A user error, but one
// the device evaluator first answers by freeing the device copies it keeps.
class OutOfDeviceMemory : public Error {
 public:
  explicit OutOfDeviceMemory(const std::string& msg) : Error(msg) {}
};

// A bug in Tapestry itself; never caused by user input.
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string& msg) : std::runtime_error(msg) {}
};

// The evaluation was cancelled (Ctrl-C) between kernels.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("evaluation cancelled (interrupted)") {}
};

template <class... Args> std::string cat_str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// A number for a message: "nan" rather than the C library's "-nan".
inline std::string num_str(double d) {
  if (d != d) return "nan";
  std::ostringstream os;
  os << d;
  return os.str();
}

// 'text' with quotes, NUL and other control bytes escaped ('a\0x'), so a message shows what
// was given instead of stopping at a NUL.
std::string quoted(std::string_view text);

template <class... Args> [[noreturn]] void user_error(const Args&... args) { throw Error(cat_str(args...)); }

template <class... Args> inline void user_check(bool ok, const Args&... args) {
  if (!ok) user_error(args...);
}

[[noreturn]] void internal_fail(const char* file, int line, const char* what);

// A failure on some rank, as it travels to rank 0 (engine/dist's statuses, loopback runs): which
// exception it was and its message. The one mapping between exceptions and failures:
//   try { ... } catch (const std::exception&) { f = current_failure(rank); }   ...   rethrow(f);
struct Failure {
  enum Kind : uint8_t { User = 0, Internal = 1, Cancelled = 2 };
  Kind kind = Internal;
  std::string message;  // "rank r: ..."
};
// The exception in flight (call it in a catch block): an Error or running out of memory is User,
// a Cancelled is Cancelled, anything else Internal; "rank r: " goes in front of the message.
Failure current_failure(int rank);
// Throws what a failure stands for: Error, InternalError or Cancelled.
[[noreturn]] void rethrow(const Failure& f);
// "rank r: " in front of a message (once).
std::string on_rank(int rank, const std::string& msg);

}  // namespace tapestry

#define internal_check(cond)                                           \
  do {                                                                 \
    if (!(cond)) ::tapestry::internal_fail(__FILE__, __LINE__, #cond); \
  } while (0)
