#include "lang/api.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "engine/ir/error.hpp"
#include "lang/api_table.hpp"

namespace tapestry {

namespace {

// Every entry, in the reference's order: the three parts of the table joined once.
const std::vector<ApiEntry>& all_entries() {
  static const std::vector<ApiEntry> all = [] {
    std::vector<ApiEntry> v;
    for (std::span<const ApiEntry> part :
         {api_table::tensor_entries(), api_table::io_entries(), api_table::library_entries()})
      v.insert(v.end(), part.begin(), part.end());
    return v;
  }();
  return all;
}

std::string_view short_name(std::string_view n) {
  const size_t p = n.find_last_of(".:");
  return p == std::string_view::npos ? n : n.substr(p + 1);
}

}  // namespace

std::span<const ApiEntry> api_entries() { return all_entries(); }

const ApiEntry* find_api(std::string_view name) {
  auto exact = [](std::string_view n) -> const ApiEntry* {
    for (const ApiEntry& e : all_entries())
      if (e.name == n) return &e;
    return nullptr;
  };
  const std::string s(name);
  // "nn.linear" finds the stdlib's "tapestry.nn.linear".
  for (const std::string& n : {s, "tp." + s, "Tensor:" + s, ":" + s, "Tensor." + s, "tapestry." + s})
    if (const ApiEntry* e = exact(n)) return e;
  return nullptr;
}

std::string format_help(const ApiEntry& e) {
  std::string out = std::string(e.usage) + "\n  " + std::string(e.doc) + "\n";
  if (e.method) out += "  Also a method: x:" + std::string(short_name(e.name)) + "(...).\n";
  return out;
}

std::string reference_markdown() {
  static const std::pair<std::string_view, std::string_view> kGroups[] = {
      {"create", "Creating tensors"},
      {"properties", "Declared properties"},
      {"map", "Elementwise operations"},
      {"operators", "Operators"},
      {"reduce", "Reductions"},
      {"sort", "Sorting and scans"},
      {"contract", "Contractions"},
      {"linalg", "Linear algebra"},
      {"fft", "Fourier transforms (tp.fft)"},
      {"shape", "Shape operations"},
      {"structure", "Diagonals and triangles"},
      {"window", "Windows"},
      {"slice", "Reading slices"},
      {"index", "Indexing: gather, scatter, masks"},
      {"tensor", "Tensor metadata"},
      {"observe", "Observation"},
      {"env", "The environment"},
      {"io", "Files"},
      {"grad", "Gradients"},
      {"plan", "Plans, layouts and the mesh"},
      {"stdlib", "Standard library"},
      {"shell", "Shell commands"},
  };
  std::string out =
      "# Tapestry language reference\n\n"
      "Generated from the API registry (`lang/api*.cpp`) by `tapestry --reference`; do not edit.\n"
      "A test fails when this file and the registry disagree.\n";
  for (const ApiEntry& e : all_entries())  // an entry in no group would be missing from the reference
    internal_check(std::any_of(std::begin(kGroups), std::end(kGroups),
                               [&](const auto& g) { return g.first == std::string_view(e.group); }));
  for (const auto& [group, title] : kGroups) {
    out += "\n## " + std::string(title) + "\n\n| usage | description |\n|---|---|\n";
    for (const ApiEntry& e : all_entries()) {
      if (e.group != group) continue;
      std::string usage(e.usage), doc(e.doc);
      for (std::string* s : {&usage, &doc}) {
        size_t p = 0;
        while ((p = s->find('|', p)) != std::string::npos) {
          s->replace(p, 1, "\\|");
          p += 2;
        }
      }
      out += "| `" + usage + "` | " + doc + " |\n";
    }
  }
  return out;
}

}  // namespace tapestry
