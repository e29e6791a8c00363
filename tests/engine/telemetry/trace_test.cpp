// The trace file is JSON a viewer can load whatever the names hold: quotes, control
// characters, bytes that are not UTF-8.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/ir/error.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "engine/telemetry/trace.hpp"

using namespace tapestry;

TEST_CASE("engine.telemetry.trace.json_string") {
  CHECK(trace::json_string("box") == "\"box\"");
  CHECK(trace::json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(trace::json_string("\n\x01") == "\"\\n\\u0001\"");
  CHECK(trace::json_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 stays as it is
  CHECK(trace::json_string("bad\xff") == "\"bad\xef\xbf\xbd\"");  // not UTF-8: U+FFFD
  CHECK(trace::json_string(std::string("\0", 1)) == "\"\\u0000\"");
}

TEST_CASE("engine.telemetry.trace.file_is_json") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tapestry-trace-" + std::to_string(::getpid()) + ".json"))
          .string();
  Telemetry t;  // a session's; record() writes to the current one
  const TelemetryScope in(t);
  trace::start(t.trace, path);
  const double t0 = trace::now_us();
  trace::record({"block", "mat\"mul\n\xff", 0, trace::kCompute, t0, 12.5,
                 "\"box\":" + trace::json_string("[0:4)") + ",\"bytes\":64"});
  trace::record({"send", "x", 3, trace::kComm, t0 + 1, -1, ""});  // a negative duration is written as 0
  CHECK(trace::stop(t.trace) == path);

  std::ifstream f(path);
  const nlohmann::json doc = nlohmann::json::parse(f);  // throws if the file is not JSON
  std::filesystem::remove(path);
  int blocks = 0, sends = 0, rank_names = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("name") == "process_name") ++rank_names;
    if (e.at("ph") != "X") continue;
    if (e.at("cat") == "block") {
      ++blocks;
      CHECK(e.at("name") == "mat\"mul\n\xef\xbf\xbd");
      CHECK(e.at("args").at("box") == "[0:4)");
      CHECK(e.at("args").at("bytes") == 64);
      CHECK(e.at("dur") == 12.5);
    } else {
      ++sends;
      CHECK(e.at("pid") == 3);
      CHECK(e.at("dur") == 0);
    }
  }
  CHECK(blocks == 1);
  CHECK(sends == 1);
  CHECK(rank_names == 2);  // ranks 0 and 3
}
