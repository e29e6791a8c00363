// Frames are decoded without trusting anything: the length is checked against the limit
// before any payload is awaited, so a peer cannot make us buffer more than one frame's worth.
#include "repl/protocol.hpp"

#include <stdexcept>

namespace tapestry::repl {

DecodeResult decode_frame(std::span<const uint8_t> bytes, size_t max_payload) {
  DecodeResult r;
  if (bytes.size() < kHeaderSize) return r;  // NeedMore
  const uint32_t length = (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) |
                          (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
  const uint8_t type = bytes[4];
  if (type == 0 || type > kLastFrameType) {
    r.status = DecodeStatus::Error;
    r.error = "unknown frame type " + std::to_string(type);
    return r;
  }
  if (length > max_payload) {
    r.status = DecodeStatus::Error;
    r.error =
        "frame of " + std::to_string(length) + " bytes exceeds the limit of " + std::to_string(max_payload);
    return r;
  }
  if (bytes.size() - kHeaderSize < length) return r;  // NeedMore
  r.status = DecodeStatus::Ok;
  r.frame.type = static_cast<FrameType>(type);
  r.frame.payload.assign(reinterpret_cast<const char*>(bytes.data() + kHeaderSize), length);
  r.consumed = kHeaderSize + length;
  return r;
}

std::string encode_frame(FrameType type, std::string_view payload) {
  if (payload.size() > kMaxPayload) throw std::length_error("frame payload over the limit");
  const auto n = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(kHeaderSize + payload.size());
  out += static_cast<char>(n >> 24);
  out += static_cast<char>(n >> 16);
  out += static_cast<char>(n >> 8);
  out += static_cast<char>(n);
  out += static_cast<char>(type);
  out += payload;
  return out;
}

void FrameDecoder::feed(const void* data, size_t size) {
  if (failed_ || size == 0) return;
  // Drop what was decoded before growing, so a long conversation keeps one frame's worth.
  if (start_ > 0 && start_ >= buf_.size() / 2) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + size);
}

DecodeResult FrameDecoder::next() {
  if (failed_) {
    DecodeResult r;
    r.status = DecodeStatus::Error;
    r.error = "the stream already failed";
    return r;
  }
  DecodeResult r = decode_frame(std::span<const uint8_t>(buf_).subspan(start_), max_payload_);
  if (r.status == DecodeStatus::Ok) start_ += r.consumed;
  if (r.status == DecodeStatus::Error) failed_ = true;
  return r;
}

std::string output_payload(OutputStream stream, std::string_view text) {
  std::string p(1, static_cast<char>(stream));
  p += text;
  return p;
}

std::string result_payload(ResultStatus status, std::string_view prompt) {
  std::string p(1, static_cast<char>(status));
  p += prompt;
  return p;
}

std::string_view frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::Hello: return "hello";
    case FrameType::Auth: return "auth";
    case FrameType::Chunk: return "chunk";
    case FrameType::Complete: return "complete";
    case FrameType::Output: return "output";
    case FrameType::Error: return "error";
    case FrameType::Result: return "result";
    case FrameType::Cancel: return "cancel";
    case FrameType::Bye: return "bye";
    case FrameType::Progress: return "progress";
  }
  return "unknown";
}

}  // namespace tapestry::repl
