// The environment: named tensors that outlive the Lua variables referring to them.
//   session.env().bind("w", expr);            // lazy: computed at the next observation
//   materialize(session);                     // engine/session: computes every pending binding
//   NodeRef w = session.env().get("w");       // the pending expression, or the stored value
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

  bool has_pending() const;
  // A pending binding computed (`stored`: its value or stored leaf), or failed (nullptr: the
  // binding is dropped and any previous value stays).
  void settle(const std::string& name, NodeRef stored);

 private:
  std::map<std::string, Entry> entries_;
};

bool is_identifier(const std::string& name);

}  // namespace tapestry
