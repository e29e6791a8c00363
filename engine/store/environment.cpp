#include "engine/store/environment.hpp"

#include <cctype>

#include "engine/ir/error.hpp"
#include "engine/ir/properties.hpp"

namespace tapestry {

namespace {

// The value as a leaf: its history (inputs) is no longer reachable from the name.
NodeRef as_leaf(NodeRef n) {
  if (n->op == Op::Source || !n->value) return n;
  return make_source(n->value, n->shape, n->dtype);
}

}  // namespace

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

void Environment::bind(const std::string& name, NodeRef value) {
  user_check(is_identifier(name), quoted(name), " is not a valid tensor name (use an identifier)");
  internal_check(value != nullptr);
  Entry& e = entries_[name];
  // A Source is data already: its value, or a stored leaf's shards (a loaded file).
  if (value->value || value->op == Op::Source || on_disk_.count(value->id)) {
    e.declared = properties_of(value).declared();
    e.stored = as_leaf(std::move(value));
    e.pending = nullptr;
    e.rebinds = 0;
    pending_.erase(name);
  } else {
    e.rebinds = e.pending ? e.rebinds + 1 : 0;
    e.pending = std::move(value);
    e.author = author_;
    pending_.insert(name);
  }
}

void Environment::drop(const std::string& name) {
  entries_.erase(name);
  pending_.erase(name);
}

NodeRef Environment::get(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.current();
}

PropertiesAttrs Environment::declared(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.pending) return {};
  return it->second.declared;
}

std::vector<std::string> Environment::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

std::vector<std::string> Environment::pending_names() const { return {pending_.begin(), pending_.end()}; }

bool Environment::overdue(const std::string& name) const {
  auto it = entries_.find(name);
  return it != entries_.end() && it->second.pending && it->second.rebinds >= kMaxPendingRebinds;
}

void Environment::settle(const std::string& name, NodeRef stored) {
  auto it = entries_.find(name);
  internal_check(it != entries_.end() && it->second.pending != nullptr);
  Entry& e = it->second;
  if (stored) e.declared = properties_of(e.pending).declared();
  e.pending = nullptr;
  e.rebinds = 0;
  pending_.erase(name);
  if (stored) e.stored = as_leaf(std::move(stored));
  else if (!e.stored) entries_.erase(it);
}

void Environment::add_failure(Failure f) {
  if (failures_.size() >= kMaxFailures) failures_.pop_front();
  failures_.push_back(std::move(f));
}

std::vector<Environment::Failure> Environment::take_failures(int author) {
  std::vector<Failure> out;
  for (auto it = failures_.begin(); it != failures_.end();) {
    if (it->author == author) {
      out.push_back(std::move(*it));
      it = failures_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace tapestry
