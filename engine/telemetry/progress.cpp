// One active scope at a time: an observation may run the single-rank evaluator inside a
// sharded one (or the planner may evaluate), and the bar must show the outer evaluation only.
#include "engine/telemetry/progress.hpp"

#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

Progress::Progress(int64_t blocks_total) : t_(current_telemetry()) {
  s_.blocks_total = blocks_total;
  if (t_.progress_depth++ == 0 && t_.progress_listener) {
    l_ = t_.progress_listener;
    l_->start(blocks_total);
  }
}

Progress::~Progress() {
  --t_.progress_depth;
  if (l_) l_->finish();
}

void Progress::set_total(int64_t blocks_total) {
  s_.blocks_total = blocks_total;
  if (l_) l_->update(s_);
}

void Progress::advance(double blocks, int64_t bytes) {
  s_.blocks_done += blocks;
  s_.bytes_moved += bytes;
  if (l_) l_->update(s_);
}

}  // namespace tapestry
