#include "engine/store/environment.hpp"

#include <cctype>

#include "engine/exec/observe.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/stored_tensor.hpp"

namespace tapestry {

Environment& env() {
  static Environment e;
  return e;
}

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
  if (value->value || stored_layout(value->id)) {  // already data (or stored shards, a loaded file)
    e.stored = std::move(value);
    e.pending = nullptr;
  } else {
    e.pending = std::move(value);
  }
}

void Environment::drop(const std::string& name) {
  entries_.erase(name);
  release_unreferenced();
}

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

void Environment::materialize() {
  // One at a time, so a failing binding names itself and cannot block the others.
  for (auto& [name, e] : entries_) {
    if (!e.pending) continue;
    NodeRef p = e.pending, stored;
    try {
      // Kept sharded where computed; the previous version's shards stay until no one reads them.
      stored = observe_stored({p})[0];
    } catch (const Error& err) {
      const std::string failed = name;  // `name` dies with the entry
      e.pending = nullptr;
      if (!e.stored) entries_.erase(failed);
      throw Error(cat_str("computing tp.env.", failed, ": ", err.what(),
                          " (the new binding was dropped; any previous value is kept)"));
    }
    e.stored = std::move(stored);
    e.pending = nullptr;
  }
  release_unreferenced();
}

}  // namespace tapestry
