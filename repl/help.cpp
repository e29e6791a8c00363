// :help reads the API registry, the single source of truth for usage lines and docs;
// the command table only supplies a fallback for a command the registry lacks.
#include "repl/help.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "lang/api.hpp"
#include "repl/commands.hpp"

namespace tapestry::repl {

namespace {

constexpr size_t kWidth = 78;

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string_view first_sentence(std::string_view doc) {
  size_t dot = doc.find(". ");
  size_t nl = doc.find('\n');
  size_t end = std::min(dot == std::string_view::npos ? doc.size() : dot + 1,
                        nl == std::string_view::npos ? doc.size() : nl);
  return doc.substr(0, end);
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// The part after the last '.' or ':' ("tp.zeros" -> "zeros"), what people type.
std::string_view short_name(std::string_view name) {
  size_t i = name.find_last_of(".:");
  return i == std::string_view::npos || i + 1 == name.size() ? name : name.substr(i + 1);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string with_newline(std::string s) {
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

// Appends "  label  a b c ..." wrapped under the first item.
void append_wrapped(std::string& out, std::string_view label, size_t label_width,
                    const std::vector<std::string_view>& items) {
  std::string line = "  " + std::string(label) + ":";
  line.resize(std::max(line.size() + 1, label_width + 4), ' ');
  const size_t indent = line.size();
  bool first = true;
  for (std::string_view item : items) {
    if (!first && line.size() + 1 + item.size() > kWidth) {
      out += line + "\n";
      line.assign(indent, ' ');
      first = true;
    }
    if (!first) line += ' ';
    line += item;
    first = false;
  }
  out += line + "\n";
}

}  // namespace

std::string help_overview() {
  std::string out = "Shell commands (:help NAME for more):\n";
  size_t usage_width = 0;
  for (const Command& c : commands()) {
    const ApiEntry* e = find_api(c.name);
    usage_width = std::max(usage_width, (e ? e->usage : c.usage).size());
  }
  for (const Command& c : commands()) {
    const ApiEntry* e = find_api(c.name);
    std::string usage(e ? e->usage : c.usage);
    usage.resize(usage_width, ' ');
    out += "  " + usage + "  " + std::string(e ? first_sentence(e->doc) : c.summary) + "\n";
  }

  // Groups in the order the registry lists them, names in registry order too.
  std::vector<std::string_view> order;
  std::map<std::string_view, std::vector<std::string_view>> groups;
  for (const ApiEntry& e : api_entries()) {
    if (e.kind == ApiKind::Command || e.kind == ApiKind::Metamethod) continue;
    auto [it, fresh] = groups.try_emplace(e.group);
    if (fresh) order.push_back(e.group);
    it->second.push_back(e.name);
  }
  if (!order.empty()) {
    out += "\nFunctions, methods and modules by group (:help zeros, :help Tensor:sum, ...):\n";
    size_t label_width = 0;
    for (std::string_view g : order) label_width = std::max(label_width, g.size());
    for (std::string_view g : order) append_wrapped(out, g, label_width, groups[g]);
  }
  out +=
      "\nAn expression typed alone is printed; the last value printed is in _.\n"
      "Ctrl-C stops a running evaluation; Ctrl-D or :quit leaves.\n"
      "a == b on tensors is not elementwise (Lua's == gives a boolean): use tp.eq(a, b) (:help ==).\n";
  return out;
}

std::string help_for(std::string_view name, bool* found) {
  name = trim(name);
  if (name.ends_with("()")) name.remove_suffix(2);
  if (found) *found = true;
  if (name.empty()) return help_overview();

  // (Built with append: g++ 12 warns falsely (-Wrestrict) on "literal" + std::string.)
  if (name == "==" || name == "~=") name = "Tensor.__eq";
  std::vector<std::string> tries = {std::string(name)};
  if (!name.starts_with(":")) tries.emplace_back(":").append(name);
  for (const std::string& t : tries)
    if (const ApiEntry* e = find_api(t)) return with_newline(format_help(*e));
  // "x:sum" for a tensor variable x: the method, whether registered as Tensor:sum or
  // as tp.sum marked as also a method.
  if (size_t i = name.find(':'); i != std::string_view::npos && i > 0) {
    const ApiEntry* e = find_api(name.substr(i + 1));
    if (e != nullptr && (e->kind == ApiKind::Method || e->method)) return with_newline(format_help(*e));
  }
  if (const Command* c = find_command(name))
    return std::string(c->usage) + "\n  " + std::string(c->summary) + "\n";

  if (found) *found = false;
  std::string out = "no help for '" + std::string(name) + "'";
  std::vector<std::string> close = close_names(name);
  if (close.size() == 1) {
    out += "; did you mean " + close[0] + "?";
  } else if (!close.empty()) {
    out += "; did you mean one of:";
    for (const std::string& c : close) out += " " + c;
    out += "?";
  } else {
    out += " (type :help for the list)";
  }
  return out + "\n";
}

std::vector<std::string> close_names(std::string_view name, size_t at_most) {
  const std::string want = lower(name);
  const std::string want_short = lower(short_name(name));
  const size_t limit = std::max<size_t>(1, want_short.size() / 3);
  std::vector<std::pair<size_t, std::string_view>> scored;
  auto consider = [&](std::string_view candidate) {
    std::string full = lower(candidate);
    std::string brief = lower(short_name(candidate));
    size_t d = std::min(edit_distance(want, full), edit_distance(want_short, brief));
    if (d <= limit) {
      scored.emplace_back(d, candidate);
    } else if (want_short.size() >= 3 && full.find(want_short) != std::string::npos) {
      scored.emplace_back(limit + 1, candidate);  // containment ranks after near misses
    }
  };
  for (const ApiEntry& e : api_entries()) consider(e.name);
  for (const Command& c : commands())
    if (find_api(c.name) == nullptr) consider(c.name);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (out.size() == at_most) break;
    if (std::find(out.begin(), out.end(), n) == out.end()) out.emplace_back(n);
  }
  return out;
}

}  // namespace tapestry::repl
