// string.find, match, gmatch and gsub that a served chunk can be cancelled out of. A count hook
// stops Lua code, but not a single C call, and a backtracking pattern ("(.-)(.-)b" over a long
// string) can run for hours inside one. So when a call's worst case is large (subject length
// to the power of its quantifiers plus one, past 1e7 steps), the original function runs on a
// helper thread in a Lua state of its own, over copies of its arguments, while this thread
// waits and watches the stop flag: cancelled, it raises "interrupted!" and leaves the helper
// to finish alone (it shares nothing with the session). gmatch fetches its matches in batches
// of 256; gsub with a table or function finds the matches there and replaces them here (the
// replacement is Lua, which the hook reaches). Small calls run as before.
//   install_cancellable_match(L, &g_stop_lua);   // tapestry serve, once
#pragma once

#include <atomic>
#include <string_view>

struct lua_State;

namespace tapestry::repl {

// direct_steps: the worst case below which a call runs in place (tests pass 0: always helped).
void install_cancellable_match(lua_State* L, const std::atomic<bool>* stop, double direct_steps = 1e7);

// The worst-case steps a Lua pattern may take over a subject of `length` bytes (for tests).
double pattern_cost(std::string_view pattern, size_t length);

}  // namespace tapestry::repl
