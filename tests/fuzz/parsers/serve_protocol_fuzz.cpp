// libFuzzer target: the serve protocol's frame decoder (repl/protocol.hpp) on arbitrary bytes,
// fed in pieces as a socket would deliver them. It must never crash, every frame it accepts
// must re-encode to exactly the bytes it consumed, and after an error it must stay failed.
// With TAPESTRY_FUZZ_SEED_DIR set, a few valid frames are written there as the seed corpus.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>

#include "repl/protocol.hpp"

using namespace tapestry::repl;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("TAPESTRY_FUZZ_SEED_DIR");
  if (!dir) return 0;
  const std::string seeds[] = {
      encode_frame(FrameType::Chunk, "print(tp.ones{2} * 3)"),
      encode_frame(FrameType::Chunk, "x = 1 +") + encode_frame(FrameType::Cancel),
      encode_frame(FrameType::Bye),
  };
  int i = 0;
  for (const std::string& s : seeds)
    std::ofstream(std::string(dir) + "/frame" + std::to_string(i++), std::ios::binary) << s;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small payload limit so oversized-length paths are reached with short inputs.
  constexpr size_t kLimit = 1024;
  FrameDecoder dec(kLimit);
  const size_t piece = size == 0 ? 1 : 1 + data[0] % 7;  // deliver in uneven pieces
  size_t fed = 0, checked = 0;
  std::string all(reinterpret_cast<const char*>(data), size);
  while (fed < size) {
    const size_t n = std::min(piece, size - fed);
    dec.feed(data + fed, n);
    fed += n;
    for (;;) {
      const DecodeResult r = dec.next();
      if (r.status == DecodeStatus::NeedMore) break;
      if (r.status == DecodeStatus::Error) {
        if (!dec.failed() || r.error.empty()) __builtin_trap();
        return 0;  // the connection would be closed here
      }
      if (r.frame.payload.size() > kLimit) __builtin_trap();
      const std::string again = encode_frame(r.frame.type, r.frame.payload);
      if (all.compare(checked, again.size(), again) != 0) __builtin_trap();
      checked += again.size();
    }
  }
  // The one-shot decoder agrees with the stream decoder on the first frame.
  const DecodeResult first = decode_frame(std::span<const uint8_t>(data, size), kLimit);
  if (first.status == DecodeStatus::Ok && first.consumed > size) __builtin_trap();
  return 0;
}
