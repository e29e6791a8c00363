// Binary messages between ranks: a writer of scalars, strings and vectors, and a reader whose
// every read is checked, so that bad bytes throw one Error and never crash or over-allocate.
//   ByteWriter w; w.put<uint32_t>(3); w.str("x"); w.vec(ints); auto bytes = w.seal(kMagic, kVersion);
//   ByteReader r(bytes, "plan message"); r.unseal(kMagic, kVersion); r.get<uint32_t>(); r.end();
//   // bad bytes: Error("plan message rejected: truncated at byte 120 (8 bytes wanted, 3 left)")
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tapestry {

// Scalars travel in native order, which is little-endian on every machine this builds for (the
// ranks of a job run one build on one architecture).
static_assert(std::endian::native == std::endian::little);

template <class T>
concept WireScalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

// A sealed message: {magic u32, version u32, body length u64, FNV-1a-64 of the body u64, body}.
inline constexpr size_t kSealBytes = 24;
uint64_t fnv1a(std::span<const char> bytes);

class ByteWriter {
 public:
  template <WireScalar T> void put(T v) { append(&v, sizeof v); }
  void size(size_t n) { put<uint64_t>(n); }  // a count or a length, always u64
  void str(std::string_view s) {
    size(s.size());
    append(s.data(), s.size());
  }
  template <std::ranges::contiguous_range R>  // a vector, span, poly::Coords... of scalars
  requires WireScalar<std::ranges::range_value_t<R>>
  void vec(const R& v) {
    size(std::ranges::size(v));
    append(std::ranges::data(v), std::ranges::size(v) * sizeof(std::ranges::range_value_t<R>));
  }
  // An unsealed message's start: magic and version only.
  void header(uint32_t magic, uint32_t version) {
    put(magic);
    put(version);
  }

  // What was written, as is or as the body of a sealed message.
  std::vector<char> take() { return std::move(out_); }
  std::vector<char> seal(uint32_t magic, uint32_t version);

 private:
  void append(const void* p, size_t n);
  std::vector<char> out_;
};

class ByteReader {
 public:
  // `what` names the message in every error: "plan message" gives "plan message rejected: ...".
  ByteReader(std::span<const char> bytes, std::string_view what) : all_(bytes), what_(what) {}

  template <WireScalar T> T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  // A count of items of at least `min_bytes` each: never more than the bytes left can hold,
  // so a corrupt count cannot make the caller allocate gigabytes before failing.
  size_t count(size_t min_bytes);
  std::string str() {
    const size_t n = count(1);
    return std::string(take(n), n);
  }
  template <WireScalar T> std::vector<T> vec() {
    std::vector<T> v(count(sizeof(T)));
    const char* p = take(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), p, v.size() * sizeof(T));
    return v;
  }
  // The start written by ByteWriter::header, or a whole sealed message's frame (length and
  // checksum included); what follows is the body.
  void header(uint32_t magic, uint32_t version);
  void unseal(uint32_t magic, uint32_t version);
  void end() const;  // rejects bytes left over

  size_t left() const { return all_.size() - at_; }
  [[noreturn]] void reject(const std::string& why) const;

 private:
  const char* take(size_t n);
  std::span<const char> all_;
  size_t at_ = 0;
  std::string what_;
};

}  // namespace tapestry
