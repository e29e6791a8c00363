#include "lang/place_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include "engine/ir/error.hpp"
#include "engine/session/placement.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/save_parts.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

NodeRef put_on_disk(lua_State* L, const NodeRef& x, const std::string& label, const std::string& otherwise) {
  Session& ses = session_of(L);
  const TelemetryScope in(ses.telemetry());
  const NodeRef part = computed_for_save(L, {x})[0];
  return place_on_disk(ses, part, label, otherwise);
}

std::string tensor_label(lua_State* L, const NodeRef& x) {
  std::string label;
  for (const auto& [name, e] : session_of(L).env().entries())
    if (e.current() == x) label += (label.empty() ? "tp.env." : ", tp.env.") + name;
  if (label.empty()) label = cat_str("the ", dtype_name(x->dtype), " ", shape_str(x->shape), " tensor");
  return label;
}

int l_place(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const Options o(L, 2, {"storage"});
  const std::optional<std::string> storage = o.string("storage");
  user_check(storage.has_value(), "opts.storage is required: {storage = \"disk\"}");
  user_check(*storage == "disk", "storage must be \"disk\" (a tensor is in memory unless placed), got ",
             quoted(*storage));
  push_tensor(L, put_on_disk(L, x, tensor_label(L, x), "it stays where it was"), "");
  return 1;
}

}  // namespace tapestry::lua
