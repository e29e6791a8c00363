// The environment: named tensors that outlive the Lua variables referring to them.
//   session.env().bind("w", expr);            // lazy: computed at the next observation
//   materialize(session);                     // engine/session: computes every pending binding
//   NodeRef w = session.env().get("w");       // the pending expression, or the stored value
// A binding whose evaluation fails is dropped and the previous value stays. A computed value is
// stored as a leaf (a Source holding the value, or on several ranks a stored leaf whose shards
// stay where they were computed, engine/store/stored_tensor.hpp): it cuts the expression's
// history, so a loop `tp.env.w = f(tp.env.w)` keeps one version, not a chain of every step.
// Under `tapestry serve` each binding has an author (the client whose chunk made it): when it
// fails in another client's observation, that observation goes on and the failure waits for
// its author (take_failures).
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/node.hpp"

namespace tapestry {

class Environment {
 public:
  struct Entry {
    NodeRef stored;   // materialized (nullptr if never computed): a leaf holding the value
    NodeRef pending;  // bound but not yet computed
    int author = 0;   // who bound `pending` (author() then)
    int rebinds = 0;  // pending rebinds in a row with no computation between: see overdue()
    // The symmetry groups known of the expression `stored` was computed from
    // (engine/ir/properties.hpp): a leaf has no history, so the entry keeps them.
    PropertiesAttrs declared;
    const NodeRef& current() const { return pending ? pending : stored; }
  };
  // A pending binding that could not be computed, waiting for its author.
  struct Failure {
    std::string name;
    std::string message;
    int author = 0;
  };
  // Pending rebinds of one name in a row, with no observation between, past which the binding
  // is computed when it is made: a loop of 10^5 unobserved rebinds would otherwise keep a chain
  // of 10^5 pending nodes alive and compute it all at once.
  static constexpr int kMaxPendingRebinds = 1000;
  // Failures kept for authors that have not come back (oldest dropped first).
  static constexpr size_t kMaxFailures = 256;

  // user_check: an identifier. A value that is data already (a Source, a node holding a value,
  // or a tensor placed on disk) is stored at once, as a leaf; anything else is pending.
  void bind(const std::string& name, NodeRef value);
  void drop(const std::string& name);
  NodeRef get(const std::string& name) const;  // nullptr when unbound
  // What get(name) is known to keep when it is a stored leaf ({} for a pending expression,
  // which carries its own): the reader declares them again, trusted.
  PropertiesAttrs declared(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  const std::map<std::string, Entry>& entries() const { return entries_; }

  bool has_pending() const { return !pending_.empty(); }  // O(1): every observation asks
  std::vector<std::string> pending_names() const;         // sorted
  // True when `name` has been rebound pending kMaxPendingRebinds times in a row.
  bool overdue(const std::string& name) const;
  // A pending binding computed (`stored`: its value or stored leaf; a node with inputs is
  // replaced by a Source holding its value), or failed (nullptr: the binding is dropped and
  // any previous value stays).
  void settle(const std::string& name, NodeRef stored);

  // A tensor placed on disk (tp.place(x, {storage = "disk"})): a lazy read of its file, bound as
  // it is (read when an observation needs it, never copied into memory by the binding).
  void mark_on_disk(uint64_t node) { on_disk_.insert(node); }
  bool on_disk(uint64_t node) const { return on_disk_.count(node) != 0; }
  void forget_on_disk(uint64_t node) { on_disk_.erase(node); }

  // Whose chunk runs now (tapestry serve: the client id; 0, the default, for the local user).
  void set_author(int author) { author_ = author; }
  int author() const { return author_; }
  void add_failure(Failure f);
  std::vector<Failure> take_failures(int author);

 private:
  std::map<std::string, Entry> entries_;
  std::set<std::string> pending_;
  int author_ = 0;
  std::deque<Failure> failures_;
  std::set<uint64_t> on_disk_;
};

// A name as tp.env takes it: an identifier (letters, digits, '_', not starting with a digit).
bool is_identifier(const std::string& name);

}  // namespace tapestry
