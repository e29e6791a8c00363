// Tensor printing, numpy style: aligned columns, long dims summarized with "...",
// and a footer with dtype and shape (as Torch7 prints it).
//   std::string s = format_tensor(value->view());
//   [[ 1.   2.5]
//    [-3.   4. ]]
//   [f32 tensor of shape {2,2}]
#pragma once

#include <string>

#include "engine/ir/value.hpp"

namespace tapestry {

// numpy's print options (np.set_printoptions), with its defaults; tp.set_printoptions sets them.
struct FormatOptions {
  int edge_items = 3;        // items kept at each end of a summarized dim
  int64_t threshold = 1000;  // summarize when numel exceeds this
  int precision = 8;         // at most this many digits after the point (numpy default)
  int line_width = 75;       // characters per line before wrapping
  bool footer = true;        // the "[f32 tensor of shape {2,2}]" line (not for scalars)
  std::string note;          // added to the footer: "[f32 tensor of shape {8,8}, NOTE]"
};

// Whether printing a tensor of this shape shows only its corners (numpy's summarization).
bool summarizes(const Shape& shape, const FormatOptions& opts);
// The dims that are summarized: those longer than twice the edge items.
bool summarized_dim(int64_t size, const FormatOptions& opts);

// `v` is the tensor, or, when `shape` is given and differs, only its corners: along each
// summarized dim of `shape`, the first and the last edge_items (what printing shows, so a
// sharded tensor is printed by gathering only those).
std::string format_tensor(const View& v, const FormatOptions& opts = {}, const Shape& shape = {});
std::string format_scalar(const View& v);  // one element, as print(x:item()) would show it

}  // namespace tapestry
