// zarr v2 arrays: tp.load_zarr, tp.save_zarr (engine/io/zarr.hpp).
//   local x, attrs = tp.load_zarr("data.zarr", {name = "x"})    -- each rank decodes its chunks
//   tp.save_zarr(x * 2, "out.zarr", {chunks = {256, 256}, compressor = "blosc", attrs = {units = "K"}})
// A save is written by every rank, each the chunks it holds (engine/session/sharded_io.hpp),
// into a fresh store swapped in whole.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/io/chunk_grid.hpp"
#include "engine/io/lazy_load.hpp"
#include "engine/io/zarr.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/attrs_lua.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/save_parts.hpp"
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
  const std::vector<int64_t> chunks = check_chunks(L, 3, x->shape);
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
  const NodeRef part = computed_for_save(L, {x})[0];
  io::ZarrMeta m;
  m.dtype = x->dtype;
  m.shape = x->shape;
  m.compressor = c;
  m.attrs = attrs;
  m.chunks = chunks;
  const StoredLayout* l = is_stored(L, part) ? s.stored().layout(part->id) : nullptr;
  if (m.chunks.empty()) {  // about 1 MiB, nested in the shards where they allow it
    const std::vector<plan::Shard> whole{plan::Shard{part->id, poly::Box::of_shape(x->shape), 0}};
    m.chunks = io::chunks_for_shards(x->shape, x->dtype, l ? l->shards : whole);
  }
  for (int64_t& ch : m.chunks)
    ch = std::max<int64_t>(ch, 1);  // zarr's chunks are positive, an empty dim's too
  if (l) {
    io::save_zarr_sharded(s, path, part, m);
  } else {
    const SaveProgress bar(numel(x->shape) * dtype_size(x->dtype));
    io::save_zarr(path, part->value->view(), m.chunks, c, attrs);
  }
  return 0;
}

}  // namespace tapestry::lua
