#include "repl/show_value.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/ir/shape.hpp"
#include "lang/lua_args.hpp"

namespace tapestry::repl {

namespace {

bool is_identifier(const char* s, size_t len) {
  static const char* const kKeywords[] = {
      "and", "break", "do",  "else", "elseif", "end",    "false",  "for",  "function", "goto",  "if",
      "in",  "local", "nil", "not",  "or",     "repeat", "return", "then", "true",     "until", "while"};
  if (len == 0 || !(isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (size_t i = 1; i < len; ++i)
    if (!(isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) return false;
  for (const char* k : kKeywords)
    if (std::strlen(k) == len && std::memcmp(k, s, len) == 0) return false;
  return true;
}

std::string quoted(const char* s, size_t len, size_t max) {
  std::string out = "\"";
  for (size_t i = 0; i < len && i < max; ++i) {
    const char c = s[i];
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 32) out += "\\" + std::to_string(static_cast<unsigned char>(c));
    else out += c;
  }
  if (len > max) out += "...";
  return out + "\"";
}

class Shower {
 public:
  Shower(lua_State* L, const ShowLimits& lim) : L_(L), lim_(lim) {}

  // The value at absolute index i, as an element of a table at `indent` columns.
  std::string value(int i, int depth, int indent) {
    switch (lua_type(L_, i)) {
      case LUA_TSTRING: {
        size_t len = 0;
        const char* s = lua_tolstring(L_, i, &len);
        return quoted(s, len, static_cast<size_t>(lim_.string));
      }
      case LUA_TTABLE:
        if (!luaL_getmetafield(L_, i, "__tostring")) return table(i, depth, indent);
        lua_pop(L_, 1);
        return first_line(i);
      case LUA_TUSERDATA:
        if (is_tensor(L_, i)) {
          const NodeRef x = check_tensor(L_, i);
          return cat_str("<", dtype_name(x->dtype), " tensor of shape ", shape_str(x->shape), ">");
        }
        return first_line(i);
      default: return first_line(i);
    }
  }

 private:
  // tostring's text, up to its first line.
  std::string first_line(int i) {
    size_t len = 0;
    const char* s = luaL_tolstring(L_, i, &len);
    std::string out(s, len);
    lua_pop(L_, 1);
    if (const size_t nl = out.find('\n'); nl != std::string::npos) out = out.substr(0, nl) + " ...";
    return out;
  }

  struct Entry {
    int kind;  // 0: sequence, 1: number key, 2: string key, 3: other
    lua_Integer index = 0;
    double number = 0;
    std::string text;  // the key as written, "[2.5]", "name", "[true]"
    int ref = 0;       // registry refs of key and value, while they are sorted
    int value_ref = 0;
  };

  std::string table(int t, int depth, int indent) {
    t = lua_absindex(L_, t);
    if (depth >= lim_.depth) return "{...}";
    if (std::find(open_.begin(), open_.end(), lua_topointer(L_, t)) != open_.end()) return "<cycle>";
    open_.push_back(lua_topointer(L_, t));
    luaL_checkstack(L_, 8, "table too deep to show");
    // Keys and values go into a scratch table so that sorting can look at them at leisure.
    lua_newtable(L_);
    const int scratch = lua_gettop(L_);
    std::vector<Entry> entries;
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L_, t));
    lua_pushnil(L_);
    while (lua_next(L_, t) != 0) {
      Entry e;
      if (lua_isinteger(L_, -2) && lua_tointeger(L_, -2) >= 1 && lua_tointeger(L_, -2) <= n) {
        e.kind = 0;
        e.index = lua_tointeger(L_, -2);
      } else if (lua_type(L_, -2) == LUA_TNUMBER) {
        e.kind = 1;
        e.number = lua_tonumber(L_, -2);
        lua_pushvalue(L_, -2);
        e.text = std::string("[") + lua_tostring(L_, -1) + "]";
        lua_pop(L_, 1);
      } else if (lua_type(L_, -2) == LUA_TSTRING) {
        size_t len = 0;
        const char* s = lua_tolstring(L_, -2, &len);
        e.kind = 2;
        e.text = is_identifier(s, len) ? std::string(s, len) : "[" + quoted(s, len, 1000) + "]";
      } else {
        e.kind = 3;
        size_t len = 0;
        const char* s = luaL_tolstring(L_, -2, &len);
        e.text = "[" + std::string(s, len) + "]";
        lua_pop(L_, 1);
      }
      lua_pushvalue(L_, -2);
      e.ref = static_cast<int>(entries.size()) * 2 + 1;
      lua_rawseti(L_, scratch, e.ref);
      e.value_ref = e.ref + 1;
      lua_rawseti(L_, scratch, e.value_ref);  // pops the value; the key stays for lua_next
      entries.push_back(std::move(e));
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      if (a.kind != b.kind) return a.kind < b.kind;
      if (a.kind == 0) return a.index < b.index;
      if (a.kind == 1) return a.number < b.number;
      return a.text < b.text;
    });
    std::vector<std::string> items;
    const size_t shown = std::min(entries.size(), static_cast<size_t>(lim_.entries));
    for (size_t k = 0; k < shown; ++k) {
      const Entry& e = entries[k];
      lua_rawgeti(L_, scratch, e.value_ref);
      std::string v = value(lua_gettop(L_), depth + 1, indent + 2);
      lua_pop(L_, 1);
      items.push_back(e.kind == 0 && e.index == static_cast<lua_Integer>(k + 1)
                          ? v
                          : (e.kind == 0 ? cat_str("[", e.index, "] = ", v) : e.text + " = " + v));
    }
    if (entries.size() > shown) items.push_back(cat_str("... (", entries.size() - shown, " more)"));
    lua_pop(L_, 1);  // the scratch table
    open_.pop_back();
    if (items.empty()) return "{}";
    std::string line = "{";
    bool multiline = false;
    for (size_t k = 0; k < items.size(); ++k) {
      line += (k ? ", " : "") + items[k];
      multiline = multiline || items[k].find('\n') != std::string::npos;
    }
    line += "}";
    if (!multiline && indent + static_cast<int>(line.size()) <= lim_.width) return line;
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    std::string out = "{\n";
    for (size_t k = 0; k < items.size(); ++k) out += pad + items[k] + (k + 1 < items.size() ? ",\n" : "\n");
    return out + std::string(static_cast<size_t>(indent), ' ') + "}";
  }

  lua_State* L_;
  ShowLimits lim_;
  std::vector<const void*> open_;  // the tables being shown, outermost first: a cycle's guard
};

}  // namespace

std::string show_value(lua_State* L, int idx, const ShowLimits& limits) {
  Shower s(L, limits);
  return s.value(lua_absindex(L, idx), 0, 0);
}

int print_shown(lua_State* L) {
  const int n = lua_gettop(L);
  for (int i = 1; i <= n; ++i) {
    if (lua_type(L, i) != LUA_TTABLE) continue;
    if (luaL_getmetafield(L, i, "__tostring")) {
      lua_pop(L, 1);
      continue;
    }
    const std::string text = show_value(L, i);
    lua_pushlstring(L, text.data(), text.size());
    lua_replace(L, i);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, 0);
  return 0;
}

}  // namespace tapestry::repl
