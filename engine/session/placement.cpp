#include "engine/session/placement.hpp"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "engine/io/lazy_load.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"

namespace tapestry {

NodeRef place_on_disk(Session& s, const NodeRef& part, const std::string& label,
                      const std::string& otherwise) {
  const std::string dir = s.work_dir() + "/disk";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  static uint64_t next = 0;
  const std::string path = cat_str(dir, "/t", ++next, ".npy");
  try {
    user_check(!ec, "'", dir, "': cannot create the folder: ", ec.message());
    user_check(!s.config().spill_fault, "'", path,
               "': cannot write: No space left on device (injected: TAPESTRY_SPILL_FAULT)");
    if (!part->value && s.stored().layout(part->id)) io::save_npy_sharded(s, {{path, part}});
    else io::save_npy(path, part->value->view());
  } catch (const Error& e) {
    std::remove(path.c_str());
    throw Error(cat_str("cannot put ", label, " on disk: ", e.what(), "; ", otherwise));
  }
  NodeRef n = io::lazy_raw(path, io::read_npy_header(path));
  s.env().mark_on_disk(n->id);
  s.placements().push_back({n, n->id, path});
  return n;
}

}  // namespace tapestry
