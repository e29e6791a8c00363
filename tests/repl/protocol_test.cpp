// The frame decoder against whole frames, frames cut anywhere, hostile headers and random
// bytes: it must never crash, never take more than it was given, and never wait for a payload
// over the limit. Also the token helpers and the serve/connect argument parsers.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "repl/connect.hpp"
#include "repl/protocol.hpp"
#include "repl/serve.hpp"
#include "repl/token.hpp"

using namespace tapestry::repl;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("repl.protocol.round_trip") {
  const std::string wire = encode_frame(FrameType::Chunk, "1 + 1");
  CHECK(wire.size() == kHeaderSize + 5);
  DecodeResult r = decode_frame(bytes_of(wire));
  REQUIRE(r.status == DecodeStatus::Ok);
  CHECK(r.frame.type == FrameType::Chunk);
  CHECK(r.frame.payload == "1 + 1");
  CHECK(r.consumed == wire.size());
  DecodeResult empty = decode_frame(bytes_of(encode_frame(FrameType::Bye)));
  REQUIRE(empty.status == DecodeStatus::Ok);
  CHECK(empty.frame.payload.empty());
}

TEST_CASE("repl.protocol.split_anywhere") {
  const std::string wire = encode_frame(FrameType::Auth, "secret") +
                           encode_frame(FrameType::Output, output_payload(OutputStream::Stderr, "x\n")) +
                           encode_frame(FrameType::Cancel);
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    FrameDecoder d;
    d.feed(wire.substr(0, cut));
    std::vector<Frame> got;
    for (DecodeResult r = d.next(); r.status == DecodeStatus::Ok; r = d.next()) got.push_back(r.frame);
    d.feed(wire.substr(cut));
    for (DecodeResult r = d.next(); r.status == DecodeStatus::Ok; r = d.next()) got.push_back(r.frame);
    CAPTURE(cut);
    REQUIRE(got.size() == 3);
    CHECK(got[0].payload == "secret");
    CHECK(got[1].payload == std::string("\x02x\n"));
    CHECK(got[2].type == FrameType::Cancel);
    CHECK(d.buffered() == 0);
    CHECK_FALSE(d.failed());
  }
}

TEST_CASE("repl.protocol.hostile_headers") {
  // Oversized: refused from the header alone, with no payload sent.
  const std::string huge = std::string("\xff\xff\xff\xff", 4) + '\x03';
  DecodeResult r = decode_frame(bytes_of(huge));
  CHECK(r.status == DecodeStatus::Error);
  CHECK(r.error.find("exceeds the limit") != std::string::npos);
  std::string just_over = encode_frame(FrameType::Chunk, "");
  const uint32_t n = kMaxPayload + 1;
  just_over[0] = static_cast<char>(n >> 24);
  just_over[1] = static_cast<char>(n >> 16);
  just_over[2] = static_cast<char>(n >> 8);
  just_over[3] = static_cast<char>(n);
  CHECK(decode_frame(bytes_of(just_over)).status == DecodeStatus::Error);
  // Unknown types.
  CHECK(decode_frame(bytes_of(std::string("\0\0\0\0\0", 5))).status == DecodeStatus::Error);
  CHECK(decode_frame(bytes_of(std::string("\0\0\0\0\x0b", 5))).status ==
        DecodeStatus::Error);  // after Progress
  // Truncated: waits, never reads past the end.
  const std::string wire = encode_frame(FrameType::Chunk, "print(1)");
  for (size_t len = 0; len < wire.size(); ++len)
    CHECK(decode_frame(bytes_of(wire.substr(0, len))).status == DecodeStatus::NeedMore);
  // A failed stream stays failed.
  FrameDecoder d;
  d.feed(huge);
  CHECK(d.next().status == DecodeStatus::Error);
  d.feed(wire);
  CHECK(d.next().status == DecodeStatus::Error);
  CHECK(d.failed());
  CHECK_THROWS_AS(encode_frame(FrameType::Chunk, std::string(kMaxPayload + 1, 'x')), std::length_error);
}

TEST_CASE("repl.protocol.random_bytes") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; ++round) {
    const size_t len = rng() % 64;
    std::string junk(len, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (round % 3 == 0 && len >= 5) junk[0] = junk[1] = 0;  // small lengths: more Ok frames
    // Whole.
    DecodeResult r = decode_frame(bytes_of(junk));
    if (r.status == DecodeStatus::Ok) {
      CHECK(r.consumed <= junk.size());
      CHECK(r.frame.payload.size() + kHeaderSize == r.consumed);
      CHECK(static_cast<int>(r.frame.type) >= 1);
      CHECK(static_cast<int>(r.frame.type) <= kLastFrameType);
    }
    // Streamed in random pieces: the decoder ends failed, waiting, or with all bytes used.
    FrameDecoder d(1024);
    size_t fed = 0, frames_bytes = 0;
    bool failed = false;
    while (fed < junk.size() && !failed) {
      const size_t piece = 1 + rng() % 9;
      d.feed(junk.data() + fed, std::min(piece, junk.size() - fed));
      fed += std::min(piece, junk.size() - fed);
      for (;;) {
        DecodeResult x = d.next();
        if (x.status == DecodeStatus::Ok) frames_bytes += x.consumed;
        if (x.status == DecodeStatus::Error) failed = true;
        if (x.status != DecodeStatus::Ok) break;
        CHECK(x.frame.payload.size() <= 1024);
      }
    }
    if (!failed) CHECK(frames_bytes + d.buffered() == junk.size());
  }
}

TEST_CASE("repl.protocol.tokens") {
  const std::string a = new_token(), b = new_token();
  CHECK(a.size() == 64);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
  CHECK(tokens_equal(a, a));
  CHECK_FALSE(tokens_equal(a, b));
  CHECK_FALSE(tokens_equal(a, a.substr(1)));
  CHECK_FALSE(tokens_equal("", a));
}

TEST_CASE("repl.protocol.serve_and_connect_arguments") {
  ServeOptions s;
  const std::vector<std::string> args{"--listen", "127.0.0.1:0", "--token-file", "t", "-n", "2"};
  CHECK(parse_serve_args(args, s).empty());
  CHECK(s.host == "127.0.0.1");
  CHECK(s.port == 0);
  CHECK(s.token_file == "t");
  CHECK(s.ranks == 2);
  ServeOptions d;
  CHECK(parse_serve_args(std::vector<std::string>{}, d).empty());
  CHECK(d.host == "127.0.0.1");
  CHECK(d.port == kDefaultServePort);
  ServeOptions bad;
  CHECK_FALSE(parse_serve_args(std::vector<std::string>{"--listen", "host:99999"}, bad).empty());
  CHECK_FALSE(parse_serve_args(std::vector<std::string>{"--listen"}, bad).empty());
  CHECK_FALSE(parse_serve_args(std::vector<std::string>{"--frob"}, bad).empty());
  ServeOptions v6;
  CHECK(parse_serve_args(std::vector<std::string>{"--listen", "[::1]:7000"}, v6).empty());
  CHECK(v6.host == "::1");
  CHECK(v6.port == 7000);

  ConnectOptions c;
  CHECK(parse_connect_args(std::vector<std::string>{"localhost:7181", "--token", "abc"}, c).empty());
  CHECK(c.host == "127.0.0.1");
  CHECK(c.port == 7181);
  CHECK(c.token == "abc");
  ConnectOptions none;
  CHECK_FALSE(parse_connect_args(std::vector<std::string>{}, none).empty());
  CHECK_FALSE(parse_connect_args(std::vector<std::string>{"7181"}, none).empty());
}
