// The registry of the Lua surface: every public function, method and shell command,
// with its usage line and doc. :help, docs/reference.md and the coverage tests read it,
// and the bindings are registered from the same table, so none can go stale.
//   const ApiEntry* e = find_api("tp.zeros");  // e->usage == "tp.zeros(shape [,opts])"
//   for (const ApiEntry& e : api_entries()) ...
#pragma once

#include <span>
#include <string>
#include <string_view>

struct lua_State;

namespace tapestry {

using LuaFn = int (*)(lua_State*);

enum class ApiKind { Function, Method, Metamethod, Command, Module };

struct ApiEntry {
  std::string_view name;  // "tp.zeros", "Tensor:sum", "Tensor.__add", ":help", "tapestry.nn.linear"
  ApiKind kind;
  std::string_view group;  // "create", "map", "reduce", "shape", ... (sections of the reference)
  std::string_view usage;  // "tp.zeros(shape [,opts])"
  std::string_view doc;    // one paragraph, may hold a short example
  LuaFn fn = nullptr;      // the binding (Function/Method/Metamethod); nullptr for commands
  bool method = false;     // a Function that is also a Tensor method: x:sum() == tp.sum(x)
};

std::span<const ApiEntry> api_entries();
// Exact name, or an unambiguous short form ("zeros", "sum" -> "tp.sum" / "Tensor:sum").
const ApiEntry* find_api(std::string_view name);
std::string format_help(const ApiEntry& e);  // usage line + doc, for :help
std::string reference_markdown();            // the whole of docs/reference.md

}  // namespace tapestry
