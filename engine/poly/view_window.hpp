// The part of a held piece that a box asks for, as a strided view (no copy).
//   View piece = ...;                          // the data of box `origin` of a tensor
//   View w = window(piece, origin, want);      // the data of `want`, inside origin
// Dims beyond the box's rank are kept whole, so a partial with extra trailing dims slices like
// its output. Works on a device view's layout too (View's arithmetic never touches the data).
#pragma once

#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry {

View window(const View& v, const poly::Box& origin, const poly::Box& want);

}  // namespace tapestry
