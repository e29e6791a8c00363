// The wire codec: what ByteWriter writes ByteReader reads back, and bad bytes (truncation,
// lying lengths and counts, a wrong magic, version or checksum) are one Error naming the message.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;

namespace {

constexpr uint32_t kMagic = 0x54534554, kVersion = 3;

std::vector<char> example() {
  ByteWriter w;
  w.put<uint8_t>(7);
  w.put<int64_t>(-5);
  w.put<double>(0.25);
  w.str("hello");
  w.vec(std::vector<int64_t>{1, -2, 3});
  w.vec(std::vector<double>{});
  return w.seal(kMagic, kVersion);
}

}  // namespace

TEST_CASE("what ByteWriter writes, ByteReader reads") {
  const std::vector<char> bytes = example();
  CHECK(bytes.size() == kSealBytes + 1 + 8 + 8 + (8 + 5) + (8 + 24) + 8);
  ByteReader r(bytes, "test message");
  r.unseal(kMagic, kVersion);
  CHECK(r.get<uint8_t>() == 7);
  CHECK(r.get<int64_t>() == -5);
  CHECK(r.get<double>() == 0.25);
  CHECK(r.str() == "hello");
  CHECK(r.vec<int64_t>() == std::vector<int64_t>{1, -2, 3});
  CHECK(r.vec<double>().empty());
  CHECK(r.left() == 0);
  r.end();
}

TEST_CASE("every truncation and every flipped byte of a sealed message is an Error") {
  const std::vector<char> bytes = example();
  for (size_t n = 0; n < bytes.size(); ++n) {
    ByteReader r(std::span<const char>(bytes.data(), n), "test message");
    CHECK_THROWS_WITH_AS(r.unseal(kMagic, kVersion), doctest::Contains("test message rejected: "), Error);
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<char> bad = bytes;
    bad[i] ^= 0x21;
    ByteReader r(bad, "test message");
    CHECK_THROWS_AS(r.unseal(kMagic, kVersion), Error);
  }
}

TEST_CASE("reads past the end say where the message ran out") {
  ByteWriter w;
  w.put<uint32_t>(1);
  const std::vector<char> bytes = w.take();
  ByteReader r(bytes, "plan message");
  CHECK_THROWS_WITH_AS(r.get<uint64_t>(),
                       "plan message rejected: truncated at byte 0 (8 bytes wanted, 4 left)", Error);
  CHECK(r.get<uint32_t>() == 1);
  CHECK_THROWS_WITH_AS(r.get<uint8_t>(), doctest::Contains("truncated at byte 4"), Error);
}

TEST_CASE("a huge count or length is rejected before anything is allocated") {
  ByteWriter w;
  w.size(uint64_t(1) << 61);  // 2^64 bytes of int64s: must fail on the count, not in the allocator
  w.put<int64_t>(0);
  std::vector<char> bytes = w.take();
  ByteReader r(bytes, "io message");
  CHECK_THROWS_WITH_AS(r.vec<int64_t>(), doctest::Contains("exceeds the message"), Error);
  ByteReader s(bytes, "io message");
  CHECK_THROWS_WITH_AS(s.str(), doctest::Contains("exceeds the message"), Error);
  // A count that fits the bytes but not the items' size: 3 int64s in 8 bytes.
  const uint64_t three = 3;
  std::memcpy(bytes.data(), &three, 8);
  ByteReader t(bytes, "io message");
  CHECK_THROWS_AS(t.vec<int64_t>(), Error);
  ByteReader u(bytes, "io message");
  CHECK(u.count(1) == 3);  // three items of one byte would fit
}

TEST_CASE("a wrong magic, version, length or checksum is rejected with its reason") {
  ByteWriter w;
  w.header(kMagic, kVersion);
  const std::vector<char> head = w.take();
  ByteReader ok(head, "command");
  ok.header(kMagic, kVersion);
  ok.end();
  ByteReader magic(head, "command");
  CHECK_THROWS_WITH_AS(magic.header(kMagic + 1, kVersion),
                       "command rejected: bad magic (not this kind of message)", Error);
  ByteReader version(head, "command");
  CHECK_THROWS_WITH_AS(version.header(kMagic, kVersion + 1),
                       doctest::Contains("wire version 3, this build reads 4"), Error);

  std::vector<char> bytes = example();
  std::vector<char> longer = bytes;
  longer.push_back(0);
  ByteReader length(longer, "plan message");
  CHECK_THROWS_WITH_AS(length.unseal(kMagic, kVersion), doctest::Contains("the header says"), Error);
  bytes.back() ^= 1;
  ByteReader sum(bytes, "plan message");
  CHECK_THROWS_WITH_AS(sum.unseal(kMagic, kVersion), doctest::Contains("checksum mismatch"), Error);
  ByteReader rest(head, "status");
  rest.get<uint32_t>();
  CHECK_THROWS_WITH_AS(rest.end(), "status rejected: 4 bytes left over after the message", Error);
}
