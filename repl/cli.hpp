// The command line of the tapestry executable, parsed without touching Lua, so the
// parser can be tested on its own. Follows lua(1): options stop at the script name.
//   CliResult r = parse_cli({"tapestry", "-e", "print(1)", "run.lua", "x"});
//   if (!r.error.empty()) { ... usage error, exit 2 ... }
//   r.options.script == "run.lua", r.options.script_index == 3
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapestry::repl {

struct CliOptions {
  std::vector<std::string> chunks;  // -e CHUNK, in command-line order
  std::string script;               // empty: none; "-" with script_is_stdin: standard input
  bool script_is_stdin = false;
  int script_index = 0;            // index of the script in argv; 0 when there is none
  bool interactive = false;        // -i
  bool help = false;               // -h, --help
  bool version = false;            // -v, --version
  bool reference = false;          // --reference: print docs/reference.md and exit
  bool calibrate = false;          // --calibrate: measure this machine's rates, cache and print them
  int ranks = 1;                   // -n N
  long long memory_per_rank = -1;  // --memory-per-rank BYTES (K/M/G suffixes); -1: not given
  std::string spill_dir;           // --spill-dir DIR: a driver's working files ("": TAPESTRY_SPILL_DIR)
  bool shrink = false;             // --shrink: a lost MPI job is replaced by a smaller one
  std::string checkpoint_dir;      // --checkpoint-dir DIR: the automatic checkpoint's
  double checkpoint_every = 0;     // --checkpoint-every MIN; 0: not given
  std::string subcommand;          // "serve" or "connect" (first argument only)
  std::vector<std::string> subcommand_args;
};

struct CliResult {
  CliOptions options;
  std::string error;  // non-empty: a usage error, printed as "tapestry: <error>"
};

// argv[0] is the program name, as main() receives it.
CliResult parse_cli(std::span<const std::string_view> argv);
CliResult parse_cli(int argc, char** argv);

std::string usage_text();    // the --help text
std::string version_text();  // "tapestry 0.1.0"

}  // namespace tapestry::repl
