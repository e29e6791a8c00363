// The environment: named tensors that outlive the Lua variables referring to them.
//   env().bind("w", expr);            // lazy: computed at the next observation
//   env().materialize();              // computes every pending binding, atomically each
//   NodeRef w = env().get("w");       // the pending expression, or the stored value
// A binding whose evaluation fails is dropped and the previous value stays. On several ranks
// a computed value stays sharded where it was computed (a stored leaf, engine/store/
// stored_tensor.hpp); the old version's shards are freed once nothing refers to them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

class Environment {
 public:
  struct Entry {
    NodeRef stored;   // materialized (nullptr if never computed): a value or a stored leaf
    NodeRef pending;  // bound but not yet computed
    const NodeRef& current() const { return pending ? pending : stored; }
  };

  void bind(const std::string& name, NodeRef value);
  void drop(const std::string& name);
  NodeRef get(const std::string& name) const;  // nullptr when unbound
  std::vector<std::string> names() const;      // sorted
  const std::map<std::string, Entry>& entries() const { return entries_; }

  // Computes pending bindings. On failure, the failing bindings are dropped (their
  // previous value stays), and the error is rethrown prefixed with the name.
  void materialize();
  bool has_pending() const;

 private:
  std::map<std::string, Entry> entries_;
};

Environment& env();
bool is_identifier(const std::string& name);

}  // namespace tapestry
