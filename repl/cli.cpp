// Command-line parsing, in lua.c's manner: options first, then the script and its
// arguments, which are never looked at (they belong to the script).
#include "repl/cli.hpp"

#include <charconv>

#ifndef TAPESTRY_VERSION
#error "TAPESTRY_VERSION must be defined by the build (from PROJECT_VERSION)"
#endif

namespace tapestry::repl {

namespace {

// The value of an option that takes one: attached ("-eCHUNK") or the next argument.
// Returns false when there is none.
bool option_value(std::span<const std::string_view> argv, size_t& i, std::string& value) {
  std::string_view a = argv[i];
  if (a.size() > 2) {
    value = std::string(a.substr(2));
    return true;
  }
  if (i + 1 >= argv.size()) return false;
  value = std::string(argv[++i]);
  return true;
}

// "1048576", "512K", "64M", "2G" (powers of 1024).
bool parse_bytes(std::string_view s, long long& bytes) {
  long long mult = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G')) {
    mult = s.back() == 'K' ? 1LL << 10 : s.back() == 'M' ? 1LL << 20 : 1LL << 30;
    s.remove_suffix(1);
  }
  long long n = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, n);
  if (ec != std::errc() || ptr != end || n < 0 || s.empty()) return false;
  bytes = n * mult;
  return true;
}

bool parse_ranks(std::string_view s, int& ranks) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, ranks);
  return ec == std::errc() && ptr == end && ranks >= 1;
}

}  // namespace

CliResult parse_cli(std::span<const std::string_view> argv) {
  CliResult r;
  CliOptions& o = r.options;
  // Subcommands exist only as the very first argument, so a script that happens
  // to be called "serve" still runs with "tapestry ./serve" or "tapestry -- serve".
  if (argv.size() >= 2 && (argv[1] == "serve" || argv[1] == "connect")) {
    o.subcommand = std::string(argv[1]);
    for (size_t i = 2; i < argv.size(); ++i) o.subcommand_args.emplace_back(argv[i]);
    return r;
  }
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a.empty() || a[0] != '-') break;  // the script
    if (a == "-") break;                  // stdin as the script
    if (a == "--") {
      ++i;
      if (i < argv.size()) {
        o.script = std::string(argv[i]);
        o.script_index = static_cast<int>(i);
      }
      return r;
    }
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--version" || a == "-v") {
      o.version = true;
    } else if (a == "--reference") {
      o.reference = true;
    } else if (a == "-i") {
      o.interactive = true;
    } else if (a.starts_with("-e")) {
      std::string chunk;
      if (!option_value(argv, i, chunk)) {
        r.error = "'-e' needs a chunk of Lua: -e 'print(1)'";
        return r;
      }
      o.chunks.push_back(std::move(chunk));
    } else if (a == "--memory-per-rank" || a.starts_with("--memory-per-rank=")) {
      std::string v;
      if (a.size() > 17) v = std::string(a.substr(18));
      else if (i + 1 < argv.size()) v = std::string(argv[++i]);
      if (!parse_bytes(v, o.memory_per_rank)) {
        r.error = "'--memory-per-rank' needs a number of bytes (K, M, G suffixes): --memory-per-rank 512M, got '" + v + "'";
        return r;
      }
    } else if (a.starts_with("-n")) {
      std::string n;
      if (!option_value(argv, i, n)) {
        r.error = "'-n' needs a number of ranks: -n 4";
        return r;
      }
      if (!parse_ranks(n, o.ranks)) {
        r.error = "'-n' needs a positive number of ranks, got '" + n + "'";
        return r;
      }
    } else {
      r.error = "unrecognized option '" + std::string(a) + "'";
      return r;
    }
  }
  if (i < argv.size()) {
    o.script = std::string(argv[i]);
    o.script_is_stdin = (argv[i] == "-");
    o.script_index = static_cast<int>(i);
  }
  return r;
}

CliResult parse_cli(int argc, char** argv) {
  std::vector<std::string_view> args(argv, argv + argc);
  if (args.empty()) args.push_back("tapestry");
  return parse_cli(std::span<const std::string_view>(args));
}

std::string usage_text() {
  return "usage: tapestry [options] [script [args]]\n"
         "       tapestry serve [--listen 127.0.0.1:PORT] [--token-file PATH] (serve --help)\n"
         "       tapestry connect HOST:PORT [--token-file PATH]             (connect --help)\n"
         "Options:\n"
         "  -e CHUNK       run the Lua chunk CHUNK (may repeat; they run in order)\n"
         "  -i             enter the interactive shell after the script or chunks\n"
         "  -n N           run on N ranks: restarts itself as `mpirun -n N tapestry ...`\n"
         "  --memory-per-rank BYTES  refuse plans that need more on a rank (512M, 2G; also\n"
         "                 TAPESTRY_MEMORY_PER_RANK)\n"
         "  -v, --version  print the version and exit\n"
         "  -h, --help     print this help and exit\n"
         "  --reference    print the language reference (docs/reference.md) and exit\n"
         "  --             stop handling options (the next argument is the script)\n"
         "  -              run standard input as a script\n"
         "With no script and no -e, tapestry opens the shell when standard input is a\n"
         "terminal; otherwise it reads chunks from standard input as the shell would,\n"
         "printing results but no prompts. A script sees its arguments in the global\n"
         "'arg' (arg[0] is the script) and as '...', as with lua(1).\n"
         "In the shell, type :help for help and Ctrl-D (or :quit) to leave.\n";
}

std::string version_text() { return std::string("tapestry ") + TAPESTRY_VERSION; }

}  // namespace tapestry::repl
