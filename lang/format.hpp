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

struct FormatOptions {
  int edge_items = 3;        // items kept at each end of a summarized dim
  int64_t threshold = 1000;  // summarize when numel exceeds this
  int precision = 8;         // at most this many digits after the point (numpy default)
  bool footer = true;        // the "[f32 tensor of shape {2,2}]" line (not for scalars)
  std::string note;          // added to the footer: "[f32 tensor of shape {8,8}, NOTE]"
};

std::string format_tensor(const View& v, const FormatOptions& opts = {});
std::string format_scalar(const View& v);  // one element, as print(x:item()) would show it

}  // namespace tapestry
