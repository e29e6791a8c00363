// One active scope at a time: an observation may run the single-rank evaluator inside a
// sharded one (or the planner may evaluate), and the bar must show the outer evaluation only.
#include "engine/telemetry/progress.hpp"

#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

Progress::Progress(int64_t blocks_total) : t_(current_telemetry()) {
  s_.blocks_total = blocks_total;
  if (t_.progress_depth++ == 0) {
    t_.progress_outer = this;
    s_.io_total = t_.io_expected.exchange(0);
    if (t_.progress_listener) {
      l_ = t_.progress_listener;
      l_->start(blocks_total);
      if (s_.io_total > 0) l_->update(s_);
    }
  }
}

Progress::~Progress() {
  if (--t_.progress_depth == 0) t_.progress_outer = nullptr;
  if (l_) l_->finish();
}

void Progress::set_total(int64_t blocks_total) {
  const std::lock_guard<std::mutex> lock(mu_);
  s_.blocks_total = blocks_total;
  if (l_) l_->update(s_);
}

void Progress::advance(double blocks, int64_t bytes) {
  if (!l_) return;  // nobody reads the state: no lock per kernel of a small observation
  const std::lock_guard<std::mutex> lock(mu_);
  s_.blocks_done += blocks;
  s_.bytes_moved += bytes;
  if (l_) l_->update(s_);
}

void Progress::add_io_total(int64_t bytes) {
  const std::lock_guard<std::mutex> lock(mu_);
  s_.io_total += bytes;
  if (l_) l_->update(s_);
}

void Progress::advance_io(int64_t bytes) {
  if (!l_) return;  // nobody reads the state: no lock per kernel of a small observation
  const std::lock_guard<std::mutex> lock(mu_);
  s_.io_done += bytes;
  if (l_) l_->update(s_);
}

void expect_io(int64_t bytes) {
  Telemetry& t = current_telemetry();
  if (Progress* p = t.progress_outer) p->add_io_total(bytes);
  else t.io_expected += bytes;
}

void note_io_progress(int64_t bytes) {
  if (Progress* p = current_telemetry().progress_outer) p->advance_io(bytes);
}

ExpectIo::ExpectIo(int64_t bytes) {
  if (bytes > 0) expect_io(bytes);
}

ExpectIo::~ExpectIo() { current_telemetry().io_expected.store(0); }

}  // namespace tapestry
