// The manifest of a checkpoint directory: which .npy file holds which named tensor.
//   Manifest m;  m.tensors.push_back({"w", "w.npy", DType::F32, {3, 4}, 48});
//   write_manifest(dir + "/manifest.json", m);       // written to a temporary, then renamed
//   Manifest back = read_manifest(dir + "/manifest.json");
// The file is JSON of one fixed form (read and written with nlohmann/json):
//   {"format": "tapestry-env", "version": 1,
//    "tensors": [{"name": "w", "file": "w.npy", "dtype": "f32", "shape": [3, 4], "bytes": 48}]}
// A tensor with declared properties (docs/properties.md) has one more key, its declaration with
// 1-based dims as tp.declare takes it (its file holds the dense values):
//   "properties": {"symmetry": [{"kind": "antisymmetric", "dims": [1, 2]}],
//                  "tiles": [64, 64], "nonzero": [true, false, ...]}
// Unknown keys are ignored (a later version may add some, and a reader older than "properties"
// loads such a tensor plain); malformed JSON and a missing or mistyped key are an Error naming
// the manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::io {

inline constexpr const char* kManifestFormat = "tapestry-env";
// Version 2 lets a file name one folder inside the checkpoint directory ("v-1a2b/w.npy"):
// save_env writes each checkpoint's files into a fresh folder. Version 1 files still load.
inline constexpr int kManifestVersion = 2;

struct ManifestEntry {
  std::string name;  // the tensor's name in the environment (an identifier)
  std::string file;  // relative to the manifest's directory: "w.npy", or "FOLDER/w.npy" (version 2)
  DType dtype = DType::F32;
  Shape shape;
  int64_t bytes = 0;           // data bytes, numel(shape) * dtype size
  PropertiesAttrs properties;  // declared groups and tiles (never `packed`); empty: none
  bool operator==(const ManifestEntry&) const = default;
};

struct Manifest {
  std::vector<ManifestEntry> tensors;
};

std::string manifest_json(const Manifest& m);
// `path` only names the source in errors.
Manifest parse_manifest(const std::string& path, const std::string& text);

// Writes path.partial-PID and renames it over `path`, so a crash never leaves half a manifest.
void write_manifest(const std::string& path, const Manifest& m);
Manifest read_manifest(const std::string& path);

}  // namespace tapestry::io
