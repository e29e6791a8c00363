// Completion walks the dotted prefix with lua_getfield under a protected call (an
// __index metamethod may run Lua code or fail), then lists the keys it can see:
// raw keys of a table, what __pairs yields (tp.env), keys of a metatable's __index
// table, and for tensors the methods of the API registry.
#include "repl/complete.hpp"

#include <editline/readline.h>
#include <lauxlib.h>
#include <lua.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "lang/api.hpp"
#include "lang/tensor_lua.hpp"
#include "repl/commands.hpp"
#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

Completer g_completer;               // the words for a Lua name
std::vector<std::string> g_matches;  // of the completion in progress

constexpr const char* kKeywords[] = {"and",      "break",  "do",   "else", "elseif", "end",  "false", "for",
                                     "function", "goto",   "if",   "in",   "local",  "nil",  "not",   "or",
                                     "repeat",   "return", "then", "true", "until",  "while"};

// Everything that cannot be part of "a.b:c" ends a word ('.' and ':' do not).
char g_word_breaks[] = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^#~";

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void add_key(lua_State* L, int key_index, std::vector<std::string>& keys) {
  if (lua_type(L, key_index) != LUA_TSTRING) return;
  std::string_view k = lua_tostring(L, key_index);
  if (is_identifier(k)) keys.emplace_back(k);
}

// Raw keys of the table at `t` (absolute index).
void table_keys(lua_State* L, int t, std::vector<std::string>& keys) {
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    lua_pop(L, 1);
    add_key(L, -1, keys);
  }
}

// Keys of the value at `v` (absolute index): see the comment at the top.
void value_keys(lua_State* L, int v, bool methods_only, std::vector<std::string>& keys) {
  if (lua_type(L, v) == LUA_TTABLE && !methods_only) table_keys(L, v, keys);
  if (!lua_getmetatable(L, v)) return;
  int mt = lua_gettop(L);
  if (lua_getfield(L, mt, "__pairs") != LUA_TNIL && !methods_only) {
    lua_pushvalue(L, v);
    lua_call(L, 1, 3);  // next, state, control
    for (int n = 0; n < 10000; ++n) {
      lua_pushvalue(L, -3);
      lua_pushvalue(L, -3);
      lua_pushvalue(L, -3);
      lua_call(L, 2, 2);
      if (lua_isnil(L, -2)) {
        lua_pop(L, 2);
        break;
      }
      add_key(L, -2, keys);
      lua_pop(L, 1);       // the value; the key is the new control
      lua_replace(L, -2);  // ...which replaces the old control
    }
    lua_pop(L, 2);
  }
  lua_settop(L, mt);
  if (lua_getfield(L, mt, "__index") == LUA_TTABLE) table_keys(L, lua_gettop(L), keys);
  lua_settop(L, mt);
  if (luaL_testudata(L, v, kTensorMeta) != nullptr) {  // its __index is a function
    for (const ApiEntry& e : api_entries()) {
      if (e.kind == ApiKind::Method && e.name.starts_with("Tensor:")) keys.emplace_back(e.name.substr(7));
      else if (e.method && e.name.starts_with("tp."))
        keys.emplace_back(e.name.substr(3));  // x:sum() == tp.sum(x)
    }
  }
  lua_settop(L, mt - 1);
}

// Protected body: [1] = word (light userdata to a std::string), [2] = out vector.
int complete_protected(lua_State* L) {
  const std::string& word = *static_cast<const std::string*>(lua_touserdata(L, 1));
  auto& out = *static_cast<std::vector<std::string>*>(lua_touserdata(L, 2));
  size_t cut = word.find_last_of(".:");
  std::vector<std::string> keys;
  std::string head;
  if (cut == std::string::npos) {
    lua_pushglobaltable(L);
    value_keys(L, lua_gettop(L), false, keys);
    for (const char* k : kKeywords) keys.emplace_back(k);
  } else {
    head = word.substr(0, cut + 1);
    // Walk "a.b.c" from the globals; give up quietly on anything else.
    lua_pushglobaltable(L);
    size_t start = 0;
    while (start < cut) {
      size_t dot = word.find_first_of(".:", start);
      std::string part = word.substr(start, dot - start);
      if (!is_identifier(part) || (dot < cut && word[dot] == ':')) return 0;
      int t = lua_type(L, -1);
      if (t != LUA_TTABLE && t != LUA_TUSERDATA) return 0;
      lua_getfield(L, -1, part.c_str());
      lua_remove(L, -2);
      start = dot + 1;
    }
    value_keys(L, lua_gettop(L), word[cut] == ':', keys);
  }
  std::string_view partial = std::string_view(word).substr(cut == std::string::npos ? 0 : cut + 1);
  for (const std::string& k : keys)
    if (k.starts_with(partial)) out.push_back(head + k);
  return 0;
}

char* next_match(const char*, int state) {
  static size_t i = 0;
  if (state == 0) i = 0;
  return i < g_matches.size() ? strdup(g_matches[i++].c_str()) : nullptr;
}

// A command's argument is a file name (":load ~/my-run/setup.lua"). The word libedit
// hands us stops at Lua's break characters ('/', '-', '~'), so complete the whole
// argument and give back each match from where that word starts.
void complete_file_argument(std::string_view line, size_t start, size_t end) {
  size_t command_end = line.find_first_of(" \t", line.find(':'));
  size_t arg_begin = line.find_first_not_of(" \t", command_end);
  if (arg_begin == std::string_view::npos || arg_begin > start) arg_begin = start;
  std::string arg(line.substr(arg_begin, end - arg_begin));
  size_t skip = start - arg_begin;
  for (int state = 0;; ++state) {
    char* m = rl_filename_completion_function(arg.c_str(), state);
    if (m == nullptr) break;
    std::string match(m);
    std::free(m);
    const std::optional<std::string>& home = shell_env().home;
    std::string path = match.starts_with("~/") && home ? *home + match.substr(1) : match;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) match += '/';
    if (match.size() >= skip) g_matches.push_back(match.substr(skip));
  }
  std::sort(g_matches.begin(), g_matches.end());
  bool one_file = g_matches.size() == 1 && !g_matches[0].ends_with("/");
  rl_completion_append_character = one_file ? ' ' : '\0';
}

char** attempt(const char* text, int start, int end) {
  std::string_view line(rl_line_buffer ? rl_line_buffer : "");
  size_t begin = std::min(static_cast<size_t>(start), line.size());
  size_t finish = std::min(std::max(static_cast<size_t>(end), begin), line.size());
  bool first_word = line.substr(0, begin).find_first_not_of(" \t") == std::string_view::npos;
  size_t first = line.find_first_not_of(" \t");
  rl_attempted_completion_over = 1;
  g_matches.clear();
  if (!first_word && first != std::string_view::npos && line[first] == ':') {
    complete_file_argument(line, begin, finish);
    if (g_matches.empty()) return nullptr;
    return rl_completion_matches(text, next_match);
  }
  std::string_view word(text);
  if (first_word && word.starts_with(":")) {
    rl_completion_append_character = ' ';  // a command is followed by its argument
    for (const Command& c : commands())
      if (c.name.starts_with(word)) g_matches.emplace_back(c.name);
  } else if (g_completer) {
    rl_completion_append_character = '\0';  // "tp.zeros" goes on with "(" or "."
    g_matches = g_completer(word);
  }
  if (g_matches.empty()) return nullptr;
  return rl_completion_matches(text, next_match);
}

}  // namespace

std::vector<std::string> completions(lua_State* L, std::string_view word) {
  std::vector<std::string> out;
  std::string w(word);
  int top = lua_gettop(L);
  lua_pushcfunction(L, complete_protected);
  lua_pushlightuserdata(L, &w);
  lua_pushlightuserdata(L, &out);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) out.clear();  // a failing __index: no completions
  lua_settop(L, top);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void install_completion(lua_State* L) {
  if (L == nullptr) return install_completer({});
  install_completer([L](std::string_view word) { return completions(L, word); });
}

void install_completer(Completer completer) {
  g_completer = std::move(completer);
  if (!g_completer) {
    rl_attempted_completion_function = nullptr;
    return;
  }
  rl_basic_word_break_characters = g_word_breaks;
  rl_completer_word_break_characters = g_word_breaks;
  rl_completion_append_character = '\0';
  rl_attempted_completion_function = attempt;
}

}  // namespace tapestry::repl
