#include <doctest/doctest.h>

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
  CHECK(parse({"-ix"}).error == "unrecognized option '-ix'");
  CHECK(parse({"-e"}).error.find("'-e' needs a chunk") != std::string::npos);
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
  CHECK(tapestry::repl::usage_text().find("-e CHUNK") != std::string::npos);
}
