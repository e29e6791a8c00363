// Help text for :help, read from the API registry (lang/api.hpp) so it is never stale.
//   std::string text = help_overview();           // commands, then names by group
//   std::string one = help_for("tp.zeros");       // usage + doc, or "no help for ..."
//   close_names("zeroes") == {"tp.zeros"}
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tapestry::repl {

std::string help_overview();
// The help for one name; `found` says whether there was any (else the text says
// "no help for 'x'" and suggests close names).
std::string help_for(std::string_view name, bool* found = nullptr);
// Registry names close to a mistyped one (edit distance or containment), best first.
std::vector<std::string> close_names(std::string_view name, size_t at_most = 5);

}  // namespace tapestry::repl
