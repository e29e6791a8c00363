// Tab completion in the shell, read from the live Lua state so it is never stale:
// globals and keywords, fields (tp.ze -> tp.zeros, tp.env.<TAB> -> named tensors),
// methods (x:su -> x:sum), ':' commands; after ":load " it completes file names.
//   install_completion(L);                        // before reading from a terminal
//   completions(L, "tp.ze") == {"tp.zeros"}
//   install_completion(nullptr);                  // off again
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

struct lua_State;

namespace tapestry::repl {

void install_completion(lua_State* L);
// The same, with the words from elsewhere (tapestry connect asks the server); {} turns it off.
// ':' commands and file names after ":load" are still completed here.
using Completer = std::function<std::vector<std::string>(std::string_view word)>;
void install_completer(Completer completer);
// The words that complete `word` (the text before the cursor back to the last
// character that cannot be part of a dotted name), sorted.
std::vector<std::string> completions(lua_State* L, std::string_view word);

}  // namespace tapestry::repl
