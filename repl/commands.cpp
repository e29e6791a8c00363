// The ':' commands. To add one (:tensors, :plan, :time, ...): write its function,
// add a row to kCommands (sorted by name), and a Command row to lang/api_library.cpp.
#include "repl/commands.hpp"

#include <lua.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "repl/help.hpp"
#include "repl/run.hpp"
#include "repl/shell.hpp"
#include "repl/shell_env.hpp"
#include "repl/timing.hpp"

namespace tapestry::repl {

namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// A file argument: surrounding quotes dropped, a leading "~/" is the home folder.
std::string path_argument(std::string_view arg) {
  arg = trim(arg);
  if (arg.size() >= 2 && (arg.front() == '"' || arg.front() == '\'') && arg.back() == arg.front())
    arg = arg.substr(1, arg.size() - 2);
  const std::optional<std::string>& home = shell_env().home;
  if (arg.starts_with("~/") && home) return *home + std::string(arg.substr(1));
  return std::string(arg);
}

void cmd_help(Shell& sh, std::string_view args) {
  bool found = true;
  std::string text = help_for(args, &found);
  if (found) {
    fputs(text.c_str(), stdout);
    fflush(stdout);
  } else {
    text.pop_back();  // print_error adds the newline
    print_error("", text);
    ++sh.errors;
  }
}

void cmd_load(Shell& sh, std::string_view args) {
  std::string path = path_argument(args);
  if (path.empty()) {
    print_error("", "usage: :load FILE");
    ++sh.errors;
    return;
  }
  if (run_file(sh.L, path.c_str(), {}, "") != LUA_OK) ++sh.errors;
}

void cmd_quit(Shell& sh, std::string_view) { sh.quit = true; }

// Commands that are Lua underneath: run `code` (with $EXPR replaced by the argument) like a
// typed line.
void run_lua(Shell& sh, std::string_view usage, std::string_view args, const std::string& code) {
  if (args.empty() && code.find("$EXPR") != std::string::npos) {
    print_error("", "usage: " + std::string(usage));
    ++sh.errors;
    return;
  }
  std::string chunk = code;
  const size_t at = chunk.find("$EXPR");
  if (at != std::string::npos) chunk.replace(at, 5, "(" + std::string(args) + ")");
  if (run_string(sh.L, chunk, "=(command)", "") != LUA_OK) ++sh.errors;
}

// NAME-or-EXPR: a bare identifier bound in tp.env means that named tensor.
std::string tensor_expr(std::string_view args) {
  const std::string a(args);
  bool ident = !a.empty() && !std::isdigit(static_cast<unsigned char>(a[0]));
  for (char c : a) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ident) return a;
  return "rawequal(tp.env." + a + ", nil) and " + a + " or tp.env." + a;
}

void cmd_plan(Shell& sh, std::string_view args) {
  // ":plan --blocks EXPR": every rank's program instead of one line per op.
  constexpr std::string_view kBlocks = "--blocks";
  if (args.substr(0, kBlocks.size()) == kBlocks) {
    args.remove_prefix(kBlocks.size());
    while (!args.empty() && args.front() == ' ') args.remove_prefix(1);
    return run_lua(sh, ":plan --blocks EXPR", args, "io.write(tp.plan$EXPR:blocks())");
  }
  run_lua(sh, ":plan [--blocks] EXPR", args, "print(tp.plan$EXPR)");
}
void cmd_explain(Shell& sh, std::string_view args) { run_lua(sh, ":explain EXPR", args, "tp.explain$EXPR"); }
void cmd_layout(Shell& sh, std::string_view args) {
  if (args.empty()) return run_lua(sh, ":layout NAME-or-EXPR", args, "$EXPR");
  run_lua(sh, ":layout NAME-or-EXPR", tensor_expr(args), "io.write(tp.layout_map$EXPR)");
}
void cmd_mesh(Shell& sh, std::string_view) {
  run_lua(sh, ":mesh", {},
          "local m = tp.mesh(); print(m.description); print(string.format("
          "'%d rank(s) on %s, transport: %s', m.ranks, m.device, m.transport)); print('gpu: ' .. m.gpu);"
          " if m.device ~= 'cpu' then print('between devices: ' .. m.device_transport) end");
}
void cmd_tensors(Shell& sh, std::string_view) {
  run_lua(sh, ":tensors", {},
          "local rows = tp.tensors(); if #rows == 0 then print('(no named tensors)') end "
          "for _, r in ipairs(rows) do "
          "local per = r.bytes_per_rank and #r.bytes_per_rank > 1 and "
          "'  per rank: ' .. table.concat(r.bytes_per_rank, ' ') or '' "
          "print(string.format('%-12s %-16s %-5s %10d bytes  %-6s  %s%s%s%s', "
          "r.name, '{' .. table.concat(r.shape, ',') .. '}', r.dtype, r.bytes, r.storage, r.layout, per, "
          "r.computed and '' or '  (pending)', r.replicated and '  (replicated)' or '')) end");
}

void cmd_trace_file(Shell& sh, std::string_view args) {
  cmd_trace(sh, args == "off" ? std::string(args) : path_argument(args));
}

constexpr Command kCommands[] = {
    {":explain", ":explain EXPR", "why the plan for EXPR was chosen (as tp.explain)", cmd_explain},
    {":help", ":help [name]", "help for a function, method or command; the list without a name", cmd_help},
    {":layout", ":layout NAME-or-EXPR", "draw which rank holds which block", cmd_layout},
    {":load", ":load FILE", "run a Lua script inside the session", cmd_load},
    {":mesh", ":mesh", "the allocation: ranks, devices, links", cmd_mesh},
    {":plan", ":plan [--blocks] EXPR",
     "the sharded plan for EXPR (as tp.plan), one line per op; --blocks lists every rank's program",
     cmd_plan},
    {":quit", ":quit", "leave the shell (Ctrl-D does too)", cmd_quit},
    {":tensors", ":tensors", "the named tensors: name, shape, dtype, bytes, storage (memory or disk), layout",
     cmd_tensors},
    {":time", ":time EXPR-or-STATEMENT", "run it and report wall time per phase: plan, run, move, print",
     cmd_time},
    {":trace", ":trace FILE / :trace off", "write a Chrome/Perfetto trace of what runs (as tp.trace)",
     cmd_trace_file},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name || c.name.substr(1) == name) return &c;
  return nullptr;
}

void run_command(Shell& sh, std::string_view line) {
  line = trim(line);
  size_t space = line.find_first_of(" \t");
  std::string_view name = line.substr(0, space);
  std::string_view args = space == std::string_view::npos ? std::string_view() : line.substr(space);
  const Command* c = name.size() > 1 ? find_command(name) : nullptr;
  if (c == nullptr) {
    print_error("", "unknown command '" + std::string(name) + "' (type :help for the list)");
    ++sh.errors;
    return;
  }
  c->run(sh, trim(args));
}

}  // namespace tapestry::repl
