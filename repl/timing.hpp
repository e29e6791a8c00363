// The :time and :trace commands: wall time per phase of one chunk, and tracing to a file.
//   cmd_time(shell, "a:matmul(b):sum()");   // prints the value, then plan/run/move/print times
//   cmd_trace(shell, "run.json");  ...  cmd_trace(shell, "off");
#pragma once

#include <string_view>

namespace tapestry::repl {

struct Shell;

void cmd_time(Shell& shell, std::string_view args);
void cmd_trace(Shell& shell, std::string_view args);

}  // namespace tapestry::repl
