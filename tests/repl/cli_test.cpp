#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "repl/cli.hpp"

using tapestry::repl::CliResult;
using tapestry::repl::parse_cli;

namespace {
CliResult parse(std::vector<std::string_view> args) {
  args.insert(args.begin(), "tapestry");
  return parse_cli(std::span<const std::string_view>(args));
}
}  // namespace

TEST_CASE("repl.cli.no_arguments_open_the_shell") {
  CliResult r = parse({});
  CHECK(r.error.empty());
  CHECK(r.options.script.empty());
  CHECK(r.options.chunks.empty());
  CHECK(r.options.script_index == 0);
  CHECK_FALSE(r.options.interactive);
}

TEST_CASE("repl.cli.chunks_keep_their_order") {
  CliResult r = parse({"-e", "a = 1", "-eb = 2", "-i"});
  REQUIRE(r.error.empty());
  CHECK(r.options.chunks == std::vector<std::string>{"a = 1", "b = 2"});
  CHECK(r.options.interactive);
}

TEST_CASE("repl.cli.script_ends_the_options") {
  CliResult r = parse({"-i", "run.lua", "-e", "x", "--", "y"});
  REQUIRE(r.error.empty());
  CHECK(r.options.script == "run.lua");
  CHECK(r.options.script_index == 2);
  CHECK(r.options.chunks.empty());  // "-e x" belongs to the script
  CHECK_FALSE(r.options.script_is_stdin);
}

TEST_CASE("repl.cli.double_dash") {
  CliResult r = parse({"--", "-weird.lua", "a"});
  REQUIRE(r.error.empty());
  CHECK(r.options.script == "-weird.lua");
  CHECK(r.options.script_index == 2);

  r = parse({"--", "-"});  // after "--", "-" is a file called "-"
  CHECK(r.options.script == "-");
  CHECK_FALSE(r.options.script_is_stdin);

  r = parse({"--"});
  CHECK(r.error.empty());
  CHECK(r.options.script.empty());
}

TEST_CASE("repl.cli.dash_is_stdin") {
  CliResult r = parse({"-", "x"});
  REQUIRE(r.error.empty());
  CHECK(r.options.script_is_stdin);
  CHECK(r.options.script_index == 1);
}

TEST_CASE("repl.cli.ranks") {
  CHECK(parse({"-n", "4"}).options.ranks == 4);
  CHECK(parse({"-n8"}).options.ranks == 8);
  CHECK(parse({"-n", "0"}).error.find("positive number of ranks") != std::string::npos);
  CHECK(parse({"-n", "4x"}).error.find("'4x'") != std::string::npos);
  CHECK(parse({"-n"}).error.find("'-n' needs") != std::string::npos);
}

TEST_CASE("repl.cli.flags") {
  CHECK(parse({"--version"}).options.version);
  CHECK(parse({"-v"}).options.version);
  CHECK(parse({"--help"}).options.help);
  CHECK(parse({"-h"}).options.help);
  CHECK(parse({"--reference"}).options.reference);
}

TEST_CASE("repl.cli.usage_errors") {
  CHECK(parse({"-z"}).error == "unrecognized option '-z'");
  CHECK(parse({"-ix"}).error == "unrecognized option '-x'");  // -i, then an unknown -x
  CHECK(parse({"--frob=1", "x.lua"}).error == "unrecognized option '--frob=1'");
  CHECK(parse({"-5"}).error == "unrecognized option '-5'");  // not a script called "-5"
  CHECK(parse({"-i", "-z", "-e", "x"}).error == "unrecognized option '-z'");
  CHECK(parse({"-e"}).error.find("'-e' needs a chunk") != std::string::npos);
}

TEST_CASE("repl.cli.values_of_options") {
  CHECK(parse({"-e", "-x"}).options.chunks == std::vector<std::string>{"-x"});  // a value, not an option
  CHECK(parse({"-e", "--"}).options.chunks == std::vector<std::string>{"--"});
  CHECK(parse({"-n", "2", "-n", "3"}).options.ranks == 3);  // the last one counts
  CHECK(parse({"-n", "99999999999"}).error == "'-n' needs a positive number of ranks, got '99999999999'");
  CHECK(parse({"-n"}).error == "'-n' needs a positive number of ranks: -n 4");
  CHECK(parse({"-e"}).error == "'-e' needs a chunk of Lua: -e 'print(1)'");
  CHECK(parse({"-ie", "x = 1"}).options.chunks == std::vector<std::string>{"x = 1"});  // grouped: -i -e
  CHECK(parse({"-ie", "x = 1"}).options.interactive);
}

TEST_CASE("repl.cli.recovery_options") {
  CHECK_FALSE(parse({}).options.shrink);
  CHECK(parse({"--shrink", "s.lua"}).options.shrink);
  CHECK(parse({"--shrink", "s.lua"}).options.script == "s.lua");
  CHECK(parse({"--checkpoint-dir", "/ck"}).options.checkpoint_dir == "/ck");
  CHECK(parse({"--checkpoint-every", "2.5"}).options.checkpoint_every == 2.5);
  CHECK(parse({}).options.checkpoint_every == 0);
  CHECK(parse({"--checkpoint-every", "0"}).error ==
        "'--checkpoint-every' needs a number of minutes > 0, got '0'");
  CHECK(parse({"--checkpoint-every", "soon"}).error.find("got 'soon'") != std::string::npos);
}

TEST_CASE("repl.cli.memory_per_rank") {
  CHECK(parse({}).options.memory_per_rank == -1);
  CHECK(parse({"--memory-per-rank", "512M"}).options.memory_per_rank == 512LL << 20);
  CHECK(parse({"--memory-per-rank=2G"}).options.memory_per_rank == 2LL << 30);
  CHECK(parse({"--memory-per-rank=1000", "--memory-per-rank", "4K"}).options.memory_per_rank == 4096);
  CHECK(parse({"--spill-dir", "/scratch/t"}).options.spill_dir == "/scratch/t");
  CHECK(parse({"--memory-per-rank", "5X"}).error ==
        "'--memory-per-rank' needs a number of bytes (K, M, G suffixes), got '5X'");
  CHECK(parse({"--memory-per-rank", "-1"}).error.find("got '-1'") != std::string::npos);
  CHECK(parse({"--memory-per-rank"}).error.starts_with("'--memory-per-rank' needs a number of bytes"));
}

TEST_CASE("repl.cli.options_after_the_script_are_its_own") {
  CliResult r = parse({"-n", "2", "run.lua", "-n", "x", "--help", "-z"});
  REQUIRE(r.error.empty());
  CHECK(r.options.ranks == 2);
  CHECK_FALSE(r.options.help);
  CHECK(r.options.script == "run.lua");
  CHECK(r.options.script_index == 3);

  r = parse({"-e", "x = 1", "--", "--", "a"});  // after "--", even "--" is a script name
  REQUIRE(r.error.empty());
  CHECK(r.options.script == "--");
  CHECK(r.options.script_index == 4);
}

TEST_CASE("repl.cli.subcommands_only_first") {
  CliResult r = parse({"connect", "host:7000"});
  CHECK(r.options.subcommand == "connect");
  CHECK(r.options.subcommand_args == std::vector<std::string>{"host:7000"});
  r = parse({"-i", "serve"});  // not first: a script called "serve"
  CHECK(r.options.subcommand.empty());
  CHECK(r.options.script == "serve");
}

TEST_CASE("repl.cli.version_text") {
  CHECK(tapestry::repl::version_text().starts_with("tapestry "));
  const std::string usage = tapestry::repl::usage_text();
  CHECK(usage.starts_with("usage: tapestry [options] [script [args]]\n"));
  for (const char* option : {"-e CHUNK", "-i ", "-n N", "--memory-per-rank BYTES", "--version", "--help",
                             "--reference", "tapestry serve", "tapestry connect"})
    CHECK_MESSAGE(usage.find(option) != std::string::npos, option);
}
