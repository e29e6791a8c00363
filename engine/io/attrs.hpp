// Attributes of a stored array (HDF5, zarr): a string, or numbers (one for a scalar).
//   Attrs a{{"units", std::string("K")}, {"origin", std::vector<double>{0.5, -1.5}}};
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace tapestry::io {

using Attr = std::variant<std::string, std::vector<double>>;
using Attrs = std::map<std::string, Attr>;

}  // namespace tapestry::io
