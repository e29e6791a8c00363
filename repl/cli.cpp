// Command-line parsing with CLI11, in lua.c's manner: options first, then the script and its
// arguments, which are never looked at (they belong to the script).
#include "repl/cli.hpp"

#include <charconv>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "engine/session/memory_budget.hpp"

#ifndef TAPESTRY_VERSION
#error "TAPESTRY_VERSION must be defined by the build (from PROJECT_VERSION)"
#endif

namespace tapestry::repl {

namespace {

// "1048576", "512K", "64M", "2G" (powers of 1024), with the engine's parser
// (engine/session/memory_budget.hpp), so the flag and TAPESTRY_MEMORY_PER_RANK read the same.
bool parse_bytes(std::string_view s, long long& bytes) {
  int64_t b = 0;
  if (!parse_byte_count(s, b)) return false;
  bytes = b;
  return true;
}

bool parse_ranks(std::string_view s, int& ranks) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, ranks);
  return ec == std::errc() && ptr == end && ranks >= 1;
}

// What each option's value must be, for the messages of a missing or a bad one:
// "'-n' needs a positive number of ranks, got '0'", "'-e' needs a chunk of Lua: -e 'print(1)'".
struct Needs {
  std::string_view option, what, example;
};
constexpr Needs kNeeds[] = {
    {"-e", "a chunk of Lua", "-e 'print(1)'"},
    {"-n", "a positive number of ranks", "-n 4"},
    {"--memory-per-rank", "a number of bytes (K, M, G suffixes)", "--memory-per-rank 512M"},
    {"--checkpoint-every", "a number of minutes > 0", "--checkpoint-every 10"},
};

bool parse_minutes(const std::string& v, double& minutes) {
  char* end = nullptr;
  minutes = std::strtod(v.c_str(), &end);
  return !v.empty() && end && *end == '\0' && minutes > 0 && minutes < 1e9;
}

const Needs& needs(std::string_view option) {
  for (const Needs& n : kNeeds)
    if (n.option == option) return n;
  return kNeeds[0];  // not reached: every option with a value is in the table
}

// A check that names the option and the value it got; CLI11 puts "NAME: " before it.
CLI::Validator check(std::string_view option, bool (*ok)(const std::string&)) {
  return CLI::Validator(
      [option, ok](std::string& v) {
        return ok(v) ? std::string() : std::string(needs(option).what) + ", got '" + v + "'";
      },
      "");
}

// The usage lines replace CLI11's "Usage: tapestry [OPTIONS]": they show the script and the
// subcommands, which are not CLI11's (see parse_cli).
class Formatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "usage: tapestry [options] [script [args]]\n"
           "       tapestry serve [--listen 127.0.0.1:PORT] [--token-file PATH] (serve --help)\n"
           "       tapestry connect HOST:PORT [--token-file PATH]             (connect --help)\n";
  }
};

// The options, bound to `o`. -e and -n take one value each time they appear (so "-e x s.lua"
// leaves s.lua to be the script); a repeated -n or --memory-per-rank keeps the last.
void define(CLI::App& app, CliOptions& o) {
  app.formatter(std::make_shared<Formatter>());
  app.get_formatter()->column_width(17);
  app.set_help_flag();   // -h is a plain flag: main() prints usage_text() and exits 0
  app.prefix_command();  // the first argument that is no option, and all after it, are left over
  app.add_option("-e", o.chunks, "run the Lua chunk CHUNK (may repeat; they run in order)")
      ->type_name("CHUNK")
      ->allow_extra_args(false);
  app.add_flag("-i", o.interactive, "enter the interactive shell after the script or chunks");
  app.add_option("-n", o.ranks, "run on N ranks: restarts itself as `mpirun -n N tapestry ...`")
      ->type_name("N")
      ->check(check("-n",
                    [](const std::string& v) {
                      int n;
                      return parse_ranks(v, n);
                    }))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option(
         "--spill-dir", o.spill_dir,
         "where working files go: what the ranks of a lost MPI\njob salvage, tensors placed on disk, and "
         "what is spilled\npast --memory-per-rank (also TAPESTRY_SPILL_DIR;\ndefault /tmp)")
      ->type_name("DIR");
  app.add_flag("--shrink", o.shrink,
               "after a lost MPI job, relaunch it on fewer ranks (one\nfewer per rank lost, at least 2) "
               "instead of as many");
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "where tp.checkpoint() and --checkpoint-every write the\nautomatic checkpoint (a "
                 "source for tensors lost with\nthe MPI job)")
      ->type_name("DIR");
  app.add_option_function<std::string>(
         "--checkpoint-every", [&o](const std::string& v) { parse_minutes(v, o.checkpoint_every); },
         "write the automatic checkpoint every MIN minutes (at\nthe first observation past it; needs "
         "--checkpoint-dir)")
      ->type_name("MIN")
      ->check(check("--checkpoint-every",
                    [](const std::string& v) {
                      double m;
                      return parse_minutes(v, m);
                    }))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option_function<std::string>(
         "--memory-per-rank", [&o](const std::string& v) { parse_bytes(v, o.memory_per_rank); },
         "each rank's memory budget: tensors and plans past it\nare refused (512M, 2G; also "
         "TAPESTRY_MEMORY_PER_RANK;\ndefault: the available memory less a margin)")
      ->type_name("BYTES")
      ->check(check("--memory-per-rank",
                    [](const std::string& v) {
                      long long b;
                      return parse_bytes(v, b);
                    }))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-v,--version", o.version, "print the version and exit");
  app.add_flag("-h,--help", o.help, "print this help and exit");
  app.add_flag("--reference", o.reference, "print the language reference (docs/reference.md) and exit");
  app.add_flag("--calibrate", o.calibrate,
               "measure this machine's compute, memory and (under mpirun -n 2) link rates for the planner, "
               "cache and print them, and exit");
  app.footer(
      "  --             stop handling options (the next argument is the script)\n"
      "  -              run standard input as a script\n"
      "With no script and no -e, tapestry opens the shell when standard input is a\n"
      "terminal; otherwise it reads chunks from standard input as the shell would,\n"
      "printing results but no prompts. A script sees its arguments in the global\n"
      "'arg' (arg[0] is the script) and as '...', as with lua(1).\n"
      "In the shell, type :help for help and Ctrl-D (or :quit) to leave.");
}

// CLI11's message for an option is "NAME: what went wrong"; ours quote the option and say what
// it needs: "'-n' needs a positive number of ranks, got '0'".
std::string option_error(const CLI::ParseError& e) {
  const std::string what = e.what();
  for (const Needs& n : kNeeds) {
    const std::string prefix = std::string(n.option) + ": ";
    if (!what.starts_with(prefix)) continue;
    const std::string quoted = "'" + std::string(n.option) + "' ";
    if (dynamic_cast<const CLI::ValidationError*>(&e)) return quoted + "needs " + what.substr(prefix.size());
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e))
      return quoted + "needs " + std::string(n.what) + ": " + std::string(n.example);
  }
  return what;
}

}  // namespace

CliResult parse_cli(std::span<const std::string_view> argv) {
  CliResult r;
  CliOptions& o = r.options;
  // Subcommands exist only as the very first argument, so a script that happens
  // to be called "serve" still runs with "tapestry ./serve" or "tapestry -- serve"
  // (CLI11 would find a subcommand anywhere among the options).
  if (argv.size() >= 2 && (argv[1] == "serve" || argv[1] == "connect")) {
    o.subcommand = std::string(argv[1]);
    for (size_t i = 2; i < argv.size(); ++i) o.subcommand_args.emplace_back(argv[i]);
    return r;
  }
  CLI::App app("", "tapestry");
  define(app, o);
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 pops from the back
  if (!reversed.empty()) reversed.pop_back();                     // the program name
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    r.error = option_error(e);
    return r;
  }
  // Left over is the tail of argv from the script on: "--" (then the script, even "-"), the
  // script, or an option CLI11 does not know (which stops nothing, so it comes first).
  std::vector<std::string> rest = app.remaining();
  if (rest.empty()) return r;
  size_t at = argv.size() - rest.size();
  if (rest[0] == "--") {
    if (rest.size() == 1) return r;
    ++at;
  } else if (rest[0].size() > 1 && rest[0][0] == '-') {
    r.error = "unrecognized option '" + rest[0] + "'";
    return r;
  } else {
    o.script_is_stdin = rest[0] == "-";
  }
  o.script = std::string(argv[at]);
  o.script_index = static_cast<int>(at);
  return r;
}

CliResult parse_cli(int argc, char** argv) {
  std::vector<std::string_view> args(argv, argv + argc);
  if (args.empty()) args.push_back("tapestry");
  return parse_cli(std::span<const std::string_view>(args));
}

std::string usage_text() {
  CliOptions unused;
  CLI::App app("", "tapestry");
  define(app, unused);
  return app.help();
}

std::string version_text() { return std::string("tapestry ") + TAPESTRY_VERSION; }

}  // namespace tapestry::repl
