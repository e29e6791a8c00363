#include <doctest/doctest.h>

#include <string>

#include "lang/api.hpp"
#include "repl/commands.hpp"
#include "repl/help.hpp"

using namespace tapestry;
using namespace tapestry::repl;

TEST_CASE("repl.commands.every_command_is_in_the_registry") {
  for (const Command& c : commands()) {
    CAPTURE(c.name);
    const ApiEntry* e = find_api(c.name);
    REQUIRE(e != nullptr);
    CHECK(e->kind == ApiKind::Command);
    CHECK(e->usage.starts_with(c.name));
  }
}

TEST_CASE("repl.commands.every_registry_command_has_a_row") {
  // A Command row without an implementation would be listed by :help and then fail.
  for (const ApiEntry& e : api_entries()) {
    if (e.kind != ApiKind::Command) continue;
    CAPTURE(e.name);
    CHECK(find_command(e.name) != nullptr);
  }
}

TEST_CASE("repl.commands.table_is_sorted") {
  auto all = commands();
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].name < all[i].name);
}

TEST_CASE("repl.help.names_and_suggestions") {
  bool found = false;
  CHECK(help_for("tp.zeros", &found).starts_with("tp.zeros("));
  CHECK(found);
  CHECK(help_for(":load", &found).starts_with(":load FILE"));
  std::string miss = help_for("zeroes", &found);
  CHECK_FALSE(found);
  CHECK(miss.starts_with("no help for 'zeroes'"));
  CHECK(miss.find("tp.zeros") != std::string::npos);
  CHECK(help_for("qqqqqqqq", &found).find("type :help for the list") != std::string::npos);
  CHECK(help_overview().find(":quit") != std::string::npos);
}
