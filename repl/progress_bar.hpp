// The shell's progress bar: listens to the executor (engine/telemetry/progress.hpp) and, once an
// evaluation has run for a second, redraws one line on stderr about 10 times a second:
//   [##########..........] 412/800 blocks  12.0 MiB moved  ETA 3s
//   [######..............] 412.0 MiB of 1.5 GiB  230.1 MiB/s  ETA 5s      (a load or save)
// erased when the evaluation ends. Only when stdout is a terminal, or TAPESTRY_PROGRESS=1.
//   if (progress_wanted(isatty(STDOUT_FILENO))) install_progress_bar(session);
#pragma once

#include <functional>
#include <memory>
#include <string_view>

namespace tapestry {
struct Telemetry;
class ProgressListener;
}  // namespace tapestry

namespace tapestry::repl {

// TAPESTRY_PROGRESS=1 forces the bar, =0 turns it off; otherwise whether stdout is a terminal.
bool progress_wanted(bool stdout_is_terminal);

// Starts the drawing thread (signals blocked in it) and listens to every evaluation of the
// session whose telemetry `t` is.
void install_progress_bar(Telemetry& t);

// A bar that hands each line to `sink` ("" to erase it) instead of drawing it: `tapestry serve`
// sends the lines to the client whose chunk runs, and the client shows them.
std::unique_ptr<ProgressListener> make_progress_bar(std::function<void(std::string_view)> sink);
// Shows a line as the local bar does: on stderr, over the previous one ("" erases it).
void show_progress_line(std::string_view line);

}  // namespace tapestry::repl
