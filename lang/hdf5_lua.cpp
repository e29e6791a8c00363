// HDF5 files: tp.load_hdf5, tp.save_hdf5 (engine/io/hdf5.hpp).
//   local u, attrs = tp.load_hdf5("sim.h5", "/fields/u")      -- attrs: the dataset's attributes
//   tp.save_hdf5(u * 2, "out.h5", "u", {attrs = {units = "K", step = 10}, chunks = {64, 64}})
// On N ranks each rank reads only its own rows; a save is written by every rank in parallel,
// its boxes raw at the dataset's offset (contiguous) or at each chunk's (chunked).
#include <lauxlib.h>
#include <lua.h>

#include <map>
#include <string>
#include <vector>

#include "engine/io/hdf5.hpp"
#include "engine/io/lazy_load.hpp"
#include "engine/io/npy.hpp"
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

int l_load_hdf5(lua_State* L) {
  const std::string path = check_path(L, 1);
  const std::string ds = check_string(L, 2, "dataset name");
  const Options o(L, 3, {"dtype", "name"});
  const std::optional<std::string> name = o.string("name");
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  const io::Hdf5Info info = io::read_hdf5_info(path, ds);
  NodeRef n = io::lazy_hdf5(path, ds, info);  // read when observed, only the boxes a plan needs
  if (const std::optional<DType> dt = o.dtype(); dt && *dt != n->dtype) n = build::cast(n, *dt);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  push_attrs(L, info.attrs);
  return 2;
}

int l_save_hdf5(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const std::string path = check_path(L, 2);
  const std::string ds = check_string(L, 3, "dataset name");
  user_check(!ds.empty() && ds != "/", "the dataset name is empty");
  const Options o(L, 4, {"attrs", "chunks"});
  const io::Attrs attrs = check_attrs(L, 4);
  const std::vector<int64_t> chunks = check_chunks(L, 4, x->shape);
  // An empty dataset has no storage, so no offset for the parallel writers to fill: refused
  // here, clearly, rather than half-written (docs/empty.md).
  user_check(
      numel(x->shape) > 0, "x ", shape_str(x->shape),
      " is empty: Tapestry writes no HDF5 dataset of size 0 (.npy, zarr and safetensors keep empty tensors)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  // Contiguous or chunked, the data is allocated at creation and every rank writes its own
  // boxes raw (at the dataset's offset, or at each chunk's).
  const std::vector<NodeRef> parts = computed_for_save(L, {x});
  auto create = [&](const std::string& tmp) {
    io::NpyHeader h;
    h.dtype = x->dtype;
    h.shape = x->shape;
    h.data_offset = io::create_hdf5(tmp, ds, x->dtype, x->shape, attrs, chunks);
    return std::vector<io::NpyHeader>{h};
  };
  io::save_parts_sharded(s, path, create, parts, chunks.empty() ? io::IoTask::Raw : io::IoTask::Hdf5, ds);
  return 0;
}

}  // namespace tapestry::lua
