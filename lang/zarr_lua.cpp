// zarr v2 arrays: tp.load_zarr, tp.save_zarr (engine/io/zarr.hpp).
//   local x, attrs = tp.load_zarr("data.zarr", {name = "x"})    -- each rank decodes its chunks
//   tp.save_zarr(x * 2, "out.zarr", {chunks = {256, 256}, compressor = "blosc", attrs = {units = "K"}})
// A save is written by rank 0 (the tensor is gathered to it) and swapped in whole.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/io/lazy_load.hpp"
#include "engine/io/zarr.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/attrs_lua.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

int l_load_zarr(lua_State* L) {
  const std::string path = check_path(L, 1);
  const Options o(L, 2, {"dtype", "name"});
  const std::optional<std::string> name = o.string("name");
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  const io::ZarrMeta m = io::read_zarr_meta(path);
  NodeRef n = io::lazy_zarr(path, m);  // read when observed, only the chunks a plan needs
  if (const std::optional<DType> dt = o.dtype(); dt && *dt != n->dtype) n = build::cast(n, *dt);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  push_attrs(L, m.attrs);
  return 2;
}

int l_save_zarr(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const std::string path = check_path(L, 2);
  const Options o(L, 3, {"chunks", "compressor", "level", "attrs"});
  const io::Attrs attrs = check_attrs(L, 3);
  std::vector<int64_t> chunks = check_chunks(L, 3, x->shape);
  if (chunks.empty()) {  // about 1 MiB chunks of whole trailing dims, split along the first
    chunks.assign(x->shape.begin(), x->shape.end());
    if (!chunks.empty()) {
      const int64_t row = numel(Shape(x->shape.begin() + 1, x->shape.end())) * dtype_size(x->dtype);
      chunks[0] =
          std::clamp<int64_t>((1 << 20) / std::max<int64_t>(row, 1), 1, std::max<int64_t>(x->shape[0], 1));
    }
  }
  for (int64_t& c : chunks) c = std::max<int64_t>(c, 1);  // zarr's chunks are positive, an empty dim's too
  io::ZarrCompressor c;
  c.id = o.string("compressor").value_or("zstd");
  if (c.id == "none") c.id.clear();
  if (!c.id.empty() && c.id != "zlib" && c.id != "gzip" && c.id != "zstd" && c.id != "blosc")
    arg_error(3, cat_str("option 'compressor' must be 'zstd', 'zlib', 'gzip', 'blosc' or 'none', got '", c.id,
                         "'"));
  if (c.id == "blosc") c.level = 5;
  if (const std::optional<int64_t> lv = o.integer("level")) {
    const int64_t hi = c.id == "zstd" ? 19 : 9;
    if (*lv < 0 || *lv > hi)
      arg_error(3, cat_str("option 'level' must be 0 to ", hi, " for ", c.id, ", got ", *lv));
    c.level = static_cast<int>(*lv);
  }
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  observe(L, {x});
  io::save_zarr(path, x->value->view(), chunks, c, attrs);
  return 0;
}

}  // namespace tapestry::lua
