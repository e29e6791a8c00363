// The Lua standard library (stdlib/*.lua), embedded in the binary at build time by
// stdlib/embed.cmake, so `require "tapestry.nn"` works whatever the working directory.
//   for (const EmbeddedModule& m : stdlib_modules())
//     luaL_loadbufferx(L, m.source.data(), m.source.size(), m.chunkname.data(), "t");
#pragma once

#include <span>
#include <string_view>

namespace tapestry {

struct EmbeddedModule {
  std::string_view name;       // "tapestry.nn": what require takes
  std::string_view chunkname;  // "@stdlib/nn.lua": what tracebacks show (NUL-terminated)
  std::string_view source;     // the file's bytes
};

std::span<const EmbeddedModule> stdlib_modules();

}  // namespace tapestry
