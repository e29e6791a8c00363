#include "repl/cancellable_match.hpp"

#include <doctest/doctest.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <atomic>
#include <string>

using namespace tapestry::repl;

TEST_CASE("repl.cancellable_match.pattern_cost") {
  CHECK(pattern_cost("abc", 1000) == doctest::Approx(1001));       // each start, once
  CHECK(pattern_cost("%w+", 99) == doctest::Approx(100.0 * 100));  // one quantifier
  CHECK(pattern_cost(".-.-b", 2000) > 1e9);                        // the slow one
  CHECK(pattern_cost("[%-+*]x", 10) == doctest::Approx(11));       // inside a class: literal
  CHECK(pattern_cost("%*%+%-%?", 10) == doctest::Approx(11));      // escaped: literal
  CHECK(pattern_cost("[]-]-", 10) == doctest::Approx(11.0 * 11));  // "]" first in a class
  CHECK(pattern_cost("%b()", 10) == doctest::Approx(11.0 * 11));   // a balance scans ahead
}

namespace {

// Runs `chunk` (returning one string) in a fresh state, with the wrappers (always on a helper
// thread) or without.
std::string run(const char* chunk, bool wrapped) {
  static std::atomic<bool> stop{false};
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  if (wrapped) install_cancellable_match(L, &stop, 0);
  std::string out;
  if (luaL_dostring(L, chunk) != LUA_OK) out = "error";  // messages differ in where they point
  else out = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)";
  lua_close(L);
  return out;
}

}  // namespace

// The helped functions give what the originals give, captures, anchors, empty matches, limits
// and errors included.
TEST_CASE("repl.cancellable_match.same_results") {
  const char* prelude = R"(
    local out = {}
    local function put(...) local t = table.pack(...) for i = 1, t.n do out[#out + 1] = tostring(t[i]) end out[#out + 1] = "|" end
  )";
  const char* cases[] = {
      "put(('hello world'):find('o w')) put(('hello'):find('l+')) put(('hello'):find('(h)(e)()')) "
      "put(('abc'):find('b', -1)) put(('abc'):find('x')) put(('a.b'):find('.', 1, true)) "
      "put(('aaa'):find('^a-$'))",
      "put(('key = value'):match('(%w+) = (%w+)')) put(('x'):match('()')) put(('abc'):match('^(b)')) "
      "put(('abc'):match('c', 3)) put(('[x]'):match('%b[]')) put(('THE (quick) fox'):match('%f[%a]%a+', 5))",
      "for a, b in ('one two  three'):gmatch('(%a)(%a*)') do put(a, b) end "
      "for w in ('a,b,,c'):gmatch('([^,]*)') do put(w) end for k in ('^a^a'):gmatch('^a') do put(k) end "
      "for p in ('abc'):gmatch('()') do put(p) end for w in ('xyz'):gmatch('.', 2) do put(w) end",
      "local t = {} for i = 1, 600 do t[i] = 'w' .. i end local s = table.concat(t, ' ') "
      "local n = 0 for w in s:gmatch('%w+') do n = n + 1 end put(n)",  // more than one batch
      "put(('hello world'):gsub('o', '0')) put(('hello world'):gsub('(%w+)', '<%1>')) "
      "put(('abc'):gsub('', '-')) put(('hello'):gsub('l', 'L', 1)) put(('abc'):gsub('^a', 'x')) "
      "put(('abc'):gsub('%w', '%0%0')) put(('x = 1'):gsub('(%w+)', 2))",
      "put(('hello world'):gsub('%w+', {hello = 'HI', world = false})) "
      "put(('a1b2'):gsub('%d', function(d) return d * 2 end)) put(('abc'):gsub('', function() return '.' "
      "end)) "
      "put(('abc'):gsub('(b)()', function(c, p) return c .. p end)) put(('aaa'):gsub('^a', {a = 'x'})) "
      "put(('a b'):gsub('%w', function() end)) put(('abab'):gsub('ab', {}, 1))",
  };
  for (const char* c : cases) {
    CAPTURE(c);
    const std::string chunk = std::string(prelude) + c + " return table.concat(out, ',')";
    const std::string want = run(chunk.c_str(), false);
    CHECK(want != "error");
    CHECK(run(chunk.c_str(), true) == want);
  }
  for (const char* bad : {"return ('x'):find('(')", "return ('x'):gsub('x', '%2')",
                          "return ('x'):gsub('x', {x = {}})", "return ('x'):gmatch('[')()"}) {
    CAPTURE(bad);
    CHECK(run(bad, false) == "error");
    CHECK(run(bad, true) == "error");
  }
}
