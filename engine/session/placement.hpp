// Where a tensor lives: tp.place(x, {storage = "disk"}) puts its value in a file under the spill
// directory and gives back a lazy read of that file (TensorWrapper's "RAM vs disk" location).
//   NodeRef d = place_on_disk(session, part, "w");   // part: computed_for_save's (lang/save_parts)
//   tp.env.w = d                                     // bound as it is: read when needed
// Written as tp.save writes (on N ranks each rank its own boxes, renamed once all succeeded)
// into SPILL_DIR/tapestry-PID/disk/tN.npy, read as tp.load reads (each rank only the boxes its
// blocks need, at each observation that needs them: nothing of it stays in memory between
// observations). The environment binds such a tensor as it is (Environment::mark_on_disk), and
// its file is removed once no Tensor, binding or expression refers to it (Session::
// sweep_placements) or when the session ends. A write that fails (a full disk;
// TAPESTRY_SPILL_FAULT=1 in the tests) is an Error naming the tensor and the reason; nothing
// is left on disk and the tensor stays where it was.
#pragma once

#include <string>

#include "engine/ir/node.hpp"

namespace tapestry {

class Session;

// `part` is a stored leaf (its ranks write their boxes) or a node holding a value; `label`
// names it in errors ("w", or its shape); `otherwise` says what a failed write left (a creator
// with storage = "disk" made nothing).
NodeRef place_on_disk(Session& s, const NodeRef& part, const std::string& label,
                      const std::string& otherwise = "it stays where it was");

}  // namespace tapestry
