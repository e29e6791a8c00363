#include "engine/ir/error.hpp"

namespace tapestry {

void internal_fail(const char* file, int line, const char* what) {
  throw InternalError(cat_str("internal error at ", file, ":", line, ": ", what,
                              " (please report this bug)"));
}

}  // namespace tapestry
