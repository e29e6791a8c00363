// The trace file is written as events come: "{"traceEvents":[" at start, one event per line,
// and "]}" at stop or exit. Timestamps are made relative to the trace's start so the viewer
// opens at zero. A rank's first event also names its process ("rank 2") and lanes.
#include "engine/telemetry/trace.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/telemetry.hpp"

namespace tapestry::trace {

namespace {

State& state() { return current_telemetry().trace; }

// The traces with a file open, finished at exit (a session may never end: os.exit).
std::mutex g_open_mu;
std::set<State*> g_open;

void finish_at_exit() {
  std::set<State*> open;
  {
    std::lock_guard<std::mutex> lock(g_open_mu);
    open = g_open;
  }
  for (State* s : open) stop(*s);
}

using Json = nlohmann::ordered_json;  // keys in the order written, as in the X events below

// Writes one element of the traceEvents array.
void put_event(State& s, const std::string& json) {
  std::fprintf(s.file, "%s%s", s.first ? "" : ",\n", json.c_str());
  s.first = false;
}

// Writes one event line; the caller holds the lock. An X event is put together as text: its
// args arrive as JSON object members (built with json_string).
void write_event(State& s, const Event& e) {
  if (s.named.insert(e.pid).second) {
    auto meta = [&](const char* what, int tid, Json args) {
      const Json event{{"ph", "M"}, {"name", what}, {"pid", e.pid}, {"tid", tid}, {"args", std::move(args)}};
      put_event(s, event.dump());
    };
    meta("process_name", 0, {{"name", cat_str("rank ", e.pid)}});
    meta("process_sort_index", 0, {{"sort_index", e.pid}});
    static const char* const kLanes[] = {"phases", "compute", "comm"};
    for (int t = 0; t < 3; ++t) meta("thread_name", t, {{"name", kLanes[t]}});
  }
  fprintf(
      s.file,
      "%s{\"ph\":\"X\",\"cat\":%s,\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{%s}}",
      s.first ? "" : ",\n", json_string(e.cat).c_str(), json_string(e.name).c_str(), e.pid, e.tid,
      e.ts_us - s.origin_us, e.dur_us < 0 ? 0.0 : e.dur_us, e.args.c_str());
  s.first = false;
}

}  // namespace

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

State::~State() { stop(*this); }

bool enabled() { return state().enabled.load(std::memory_order_relaxed); }

void start(State& s, const std::string& p) {
  stop(s);
  FILE* f = std::fopen(p.c_str(), "w");
  if (!f) user_error("cannot write the trace '", p, "': ", std::strerror(errno));
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.file = f;
    s.path = p;
    s.origin_us = now_us();
    s.first = true;
    s.named.clear();
    std::fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
  }
  {
    std::lock_guard<std::mutex> lock(g_open_mu);
    g_open.insert(&s);
  }
  static const bool registered = (std::atexit(finish_at_exit), true);
  (void)registered;
  s.enabled = true;
}

std::string stop(State& s) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.file) return {};
  std::fputs("\n]}\n", s.file);
  std::fclose(s.file);
  s.file = nullptr;
  s.enabled = s.capturing;
  {
    std::lock_guard<std::mutex> open_lock(g_open_mu);
    g_open.erase(&s);
  }
  return std::exchange(s.path, std::string());
}

std::string path(State& s) {
  std::lock_guard<std::mutex> lock(s.mu);
  return s.path;
}

void record(Event e) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.capturing) s.captured.push_back(std::move(e));
  else if (s.file) write_event(s, e);
}

void begin_capture() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.capturing = true;
  s.captured.clear();
  s.enabled = true;
}

std::vector<Event> end_capture() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.capturing = false;
  s.enabled = s.file != nullptr;
  return std::exchange(s.captured, {});
}

std::vector<char> encode_events(const std::vector<Event>& events, double origin_us) {
  ByteWriter w;
  w.size(events.size());
  for (const Event& e : events) {
    w.str(e.cat);
    w.str(e.name);
    w.put<int32_t>(e.tid);
    w.put<double>(e.ts_us - origin_us);
    w.put<double>(e.dur_us);
    w.str(e.args);
  }
  return w.take();
}

std::vector<Event> decode_events(std::span<const char> bytes, double origin_us) {
  ByteReader r(bytes, "trace message");
  std::vector<Event> out(r.count(44));  // 3 string lengths, tid, ts and dur
  for (Event& e : out) {
    e.cat = r.str();
    e.name = r.str();
    e.tid = r.get<int32_t>();
    e.ts_us = r.get<double>() + origin_us;
    e.dur_us = r.get<double>();
    e.args = r.str();
  }
  r.end();
  return out;
}

std::string json_string(std::string_view s) {
  // Names come from users: bytes that are not UTF-8 become U+FFFD, so the file stays valid JSON.
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tapestry::trace
