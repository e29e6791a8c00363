#include "engine/store/environment.hpp"

#include <cctype>

#include "engine/ir/error.hpp"

namespace tapestry {

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

void Environment::bind(const std::string& name, NodeRef value) {
  user_check(is_identifier(name), "'", name, "' is not a valid tensor name (use an identifier)");
  internal_check(value != nullptr);
  Entry& e = entries_[name];
  // A Source is data already: its value, or a stored leaf's shards (a loaded file).
  if (value->value || value->op == Op::Source) {
    e.stored = std::move(value);
    e.pending = nullptr;
  } else {
    e.pending = std::move(value);
  }
}

void Environment::drop(const std::string& name) { entries_.erase(name); }

NodeRef Environment::get(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.current();
}

std::vector<std::string> Environment::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

bool Environment::has_pending() const {
  for (const auto& [name, e] : entries_)
    if (e.pending) return true;
  return false;
}

void Environment::settle(const std::string& name, NodeRef stored) {
  auto it = entries_.find(name);
  internal_check(it != entries_.end() && it->second.pending != nullptr);
  Entry& e = it->second;
  e.pending = nullptr;
  if (stored) e.stored = std::move(stored);
  else if (!e.stored) entries_.erase(it);
}

}  // namespace tapestry
