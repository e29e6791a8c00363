#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "engine/ir/value.hpp"

using namespace tapestry;

namespace {
uintptr_t address(const Buffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }
constexpr uintptr_t kMiB = uintptr_t(1) << 20;
}  // namespace

TEST_CASE("engine.ir.value.buffers_are_64_byte_aligned") {
  for (size_t bytes : {size_t(1), size_t(100), size_t(4096), size_t(70000), size_t(3) << 20}) {
    Buffer b(bytes);
    CHECK(address(b) % 64 == 0);
    std::memset(b.data(), 1, bytes);  // every byte asked for is there
  }
}

// Blocks of 16 MiB and more are 2 MiB aligned and advised to the kernel as huge-page backed
// (value.cpp, allocate_block): a pass over them walks 512 times fewer page table entries.
// Fresh from the system and again from the block cache.
TEST_CASE("engine.ir.value.large_buffers_are_huge_page_aligned") {
  for (size_t bytes : {size_t(16) << 20, (size_t(24) << 20) + 12345, size_t(100) << 20}) {
    for (int round = 0; round < 2; ++round) {  // the second takes the cached block
      auto b = std::make_unique<Buffer>(bytes);
      CHECK(address(*b) % (2 * kMiB) == 0);
      std::memset(b->data(), 0, bytes);
    }
  }
  Buffer small(8 << 20);  // below the threshold: 64-byte aligned, no more promised
  CHECK(address(small) % 64 == 0);
}
