// The wire format of `tapestry serve` / `tapestry connect`: frames of {u32 big-endian length,
// u8 type, payload[length]}. Decoding is a pure function over bytes, so it can be fuzzed.
//   std::string wire = encode_frame(FrameType::Chunk, "1 + 1");  // 5 header bytes + payload
//   FrameDecoder d; d.feed(wire);
//   DecodeResult r = d.next();  // r.status == DecodeStatus::Ok, r.frame.payload == "1 + 1"
//
// A conversation: the client sends Auth{token}; the server answers Hello{prompt "\n" banner} or
// Error{why} and closes. Then each Chunk{code} gets any number of Output{stream byte, text} and
// one Result{status byte, prompt} or Error{message}, with Progress{line} frames meanwhile once an
// evaluation has run a second; Complete{word} gets Complete{"\n"-joined
// words}; Cancel stops the client's running chunk; Bye ends the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapestry::repl {

enum class FrameType : uint8_t {
  Hello = 1,      // server -> client, after a good Auth
  Auth = 2,       // client -> server: the token, first and once
  Chunk = 3,      // client -> server: Lua code or a ':' command
  Complete = 4,   // both ways: a word to complete / the completions
  Output = 5,     // server -> client: what the chunk printed (first byte: 1 stdout, 2 stderr)
  Error = 6,      // server -> client: the chunk failed, or the connection is refused
  Result = 7,     // server -> client: the chunk is done (first byte: a ResultStatus)
  Cancel = 8,     // client -> server: stop my running chunk (Ctrl-C)
  Bye = 9,        // either way: the connection ends
  Progress = 10,  // server -> client: the progress bar's line while a chunk evaluates ("": erase it)
};
inline constexpr uint8_t kLastFrameType = 10;

inline constexpr size_t kHeaderSize = 5;
// Big enough for any chunk a person pastes or a script sends; small enough that a hostile
// length prefix cannot make the server allocate much.
inline constexpr size_t kMaxPayload = size_t{16} << 20;

// The most a client that has not logged in may send in one frame: an Auth frame carries a
// token (64 hex digits from new_token), so a few hundred bytes are plenty, and an unknown
// client can make the server buffer no more.
inline constexpr size_t kMaxAuthPayload = 512;

enum class ResultStatus : uint8_t { Done = 0, Incomplete = 1 };
enum class OutputStream : uint8_t { Stdout = 1, Stderr = 2 };

struct Frame {
  FrameType type = FrameType::Bye;
  std::string payload;
};

enum class DecodeStatus { Ok, NeedMore, Error };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::NeedMore;
  Frame frame;          // when Ok
  size_t consumed = 0;  // bytes of input the frame took (Ok only)
  std::string error;    // when Error: why, for the log and the Error frame
};

// The first frame at the start of `bytes`. An oversized length or an unknown type is an
// Error as soon as the 5 header bytes are there, without waiting for the payload.
DecodeResult decode_frame(std::span<const uint8_t> bytes, size_t max_payload = kMaxPayload);

// Header and payload, ready to write. Throws std::length_error above kMaxPayload.
std::string encode_frame(FrameType type, std::string_view payload = {});

// Bytes from a stream in, frames out. After an Error it stays failed (the connection ends).
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_payload = kMaxPayload) : max_payload_(max_payload) {}
  void feed(const void* data, size_t size);
  void feed(std::string_view s) { feed(s.data(), s.size()); }
  DecodeResult next();
  void set_max_payload(size_t max_payload) { max_payload_ = max_payload; }
  bool failed() const { return failed_; }
  size_t buffered() const { return buf_.size() - start_; }

 private:
  std::vector<uint8_t> buf_;
  size_t start_ = 0;  // first byte not yet decoded
  size_t max_payload_;
  bool failed_ = false;
};

// Payload helpers for the frames whose payload has a leading byte.
std::string output_payload(OutputStream stream, std::string_view text);
std::string result_payload(ResultStatus status, std::string_view prompt);
std::string_view frame_type_name(FrameType type);  // "chunk", for logs

}  // namespace tapestry::repl
