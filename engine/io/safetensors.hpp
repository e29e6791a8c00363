// safetensors files (Hugging Face's format for model weights), read and written by boxes.
//   SafetensorsFile f = read_safetensors_header("model.safetensors");
//   read_npy_box(path, f.tensors[0].header, box, out);   // each tensor is raw C-order data
//   SafetensorsLayout l = safetensors_layout({{"w", DType::F32, {3, 4}}}, {{"format", "pt"}});
// Format: an 8-byte little-endian header length N, N bytes of JSON
//   {"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}, "__metadata__": {"k": "v"}}
// then the data; offsets count from the end of the header. Each tensor is little-endian C-order
// bytes, so an NpyHeader with an absolute data_offset describes it and npy.hpp's box I/O reads
// and writes it. Dtypes: F32 F64 I32 I64 BOOL (others are refused by name). The JSON is parsed
// with nlohmann/json; every failure is a tapestry::Error that starts with the quoted path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/io/npy.hpp"

namespace tapestry::io {

struct SafetensorsEntry {
  std::string name;
  NpyHeader header;  // dtype, shape and the absolute offset of its data in the file
};

struct SafetensorsFile {
  std::vector<SafetensorsEntry> tensors;  // in the order of their data
  std::map<std::string, std::string> metadata;
};

// Reads and validates the header: its length, the JSON, each entry's dtype and shape, offsets
// that match the shape, lie inside the file and do not overlap.
SafetensorsFile read_safetensors_header(const std::string& path);
// The same from the header's JSON text and the size of the data after it (`path` names errors).
SafetensorsFile parse_safetensors_header(const std::string& path, const std::string& json, int64_t header_end,
                                         int64_t data_bytes);

struct SafetensorsSpec {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

// Where each tensor of a file we write goes (pure: every rank computes the same).
struct SafetensorsLayout {
  std::string header;                     // the length and the JSON, padded to 8 bytes
  std::vector<SafetensorsEntry> tensors;  // in the order given
  int64_t file_bytes = 0;
};
SafetensorsLayout safetensors_layout(const std::vector<SafetensorsSpec>& specs,
                                     const std::map<std::string, std::string>& metadata);

// Creates `path` (which must not exist: a temporary name), writes the header and sizes the
// file for all the data, so the tensors' boxes can then be written concurrently.
void create_safetensors(const std::string& path, const SafetensorsLayout& layout);

}  // namespace tapestry::io
