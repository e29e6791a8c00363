// libFuzzer target: the .npy reader (engine/io/npy.hpp) on arbitrary bytes. Every input must
// either read or throw tapestry::Error; ASan/UBSan report anything else. Built by
// .ci/fuzz-parsers with clang -fsanitize=fuzzer,address,undefined.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tapestry_npy_fuzz_" + std::to_string(getpid()) + ".npy";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const io::NpyHeader h = io::read_npy_header(path);
    if (h.data_bytes() <= (1 << 20)) {  // the reader checked the file holds them
      auto v = Value::alloc(h.dtype, h.shape);
      io::read_npy_box(path, h, poly::Box::of_shape(h.shape), v->view());
      io::load_npy(path);
    }
  } catch (const Error&) {
  }
  return 0;
}
