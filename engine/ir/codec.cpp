#include "engine/ir/codec.hpp"

#include "engine/ir/error.hpp"

namespace tapestry {

uint64_t fnv1a(std::span<const char> bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

void ByteWriter::append(const void* p, size_t n) {
  if (n == 0) return;  // p may be null (an empty vector's data)
  // Copies once (a resize zero-filled first: a plan message's payload written twice).
  const char* c = static_cast<const char*>(p);
  out_.insert(out_.end(), c, c + n);
}

std::vector<char> ByteWriter::seal(uint32_t magic, uint32_t version) {
  ByteWriter h;
  h.header(magic, version);
  h.put<uint64_t>(out_.size());
  h.put(fnv1a(out_));
  std::vector<char> out = h.take();
  out.insert(out.end(), out_.begin(), out_.end());
  out_.clear();
  return out;
}

void ByteReader::reject(const std::string& why) const { throw Error(cat_str(what_, " rejected: ", why)); }

const char* ByteReader::take(size_t n) {
  if (n > left()) reject(cat_str("truncated at byte ", at_, " (", n, " bytes wanted, ", left(), " left)"));
  const char* p = all_.data() + at_;
  at_ += n;
  return p;
}

size_t ByteReader::count(size_t min_bytes) {
  const size_t at = at_;
  const uint64_t n = get<uint64_t>();
  if (n > left() / (min_bytes ? min_bytes : 1))
    reject(cat_str("the count ", n, " at byte ", at, " exceeds the message (", left(), " bytes left)"));
  return static_cast<size_t>(n);
}

void ByteReader::header(uint32_t magic, uint32_t version) {
  if (get<uint32_t>() != magic) reject("bad magic (not this kind of message)");
  const uint32_t v = get<uint32_t>();
  if (v != version)
    reject(cat_str("wire version ", v, ", this build reads ", version, " (mixed builds in one job?)"));
}

void ByteReader::unseal(uint32_t magic, uint32_t version) {
  if (left() < kSealBytes) reject(cat_str("only ", left(), " bytes, less than a header"));
  header(magic, version);
  const uint64_t length = get<uint64_t>();
  const uint64_t sum = get<uint64_t>();
  if (length != left())
    reject(cat_str("the header says ", length, " bytes of body, the message has ", left()));
  if (fnv1a(all_.subspan(at_)) != sum) reject("checksum mismatch (corrupted in transit)");
}

void ByteReader::end() const {
  if (left() != 0) reject(cat_str(left(), " bytes left over after the message"));
}

}  // namespace tapestry
