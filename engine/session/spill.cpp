#include "engine/session/spill.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/io/lazy_load.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/planner.hpp"
#include "engine/session/session.hpp"

namespace tapestry {

namespace {

// The Spill whose handler is the process's (sessions come and go in tests).
std::atomic<Spill*> g_owner{nullptr};

}  // namespace

Spill::~Spill() {
  Spill* me = this;
  if (g_owner.compare_exchange_strong(me, nullptr)) set_memory_pressure_handler({});
}

void Spill::install() {
  g_owner = this;
  set_memory_pressure_handler([this](int64_t need) { return relieve(need); });
}

std::string Spill::dir() const { return s_.work_dir() + "/spill"; }

bool Spill::relieve(int64_t need) {
  std::lock_guard lock(mu_);
  const std::string where = dir();
  int64_t freed = 0;
  try {
    freed = s_.shard_store().spill_coldest(need, where, s_.config().spill_fault, [this](uint64_t key) {
      const std::string names = s_.names_of(key);
      return names.empty() ? cat_str("stored tensor %", key) : "tp.env." + names;
    });
    if (freed < need) freed += spill_nodes(need - freed);
  } catch (const Error& e) {
    throw OutOfMemory(cat_str("out of memory: an allocation would pass the memory budget (--memory-per-rank ",
                              human_bytes(static_cast<double>(s_.memory_per_rank())),
                              "), and spilling to disk failed: ", e.what(), "; it stays in memory"));
  }
  return freed > 0;
}

int64_t Spill::spill_nodes(int64_t need) {
  // A named tensor's leaf shares its value with the node it was computed as (Environment
  // binds a leaf): both go together, as one group per value, as warm as its warmest node.
  // A named leaf no observation has read yet is the coldest.
  for (const auto& [name, e] : s_.env().entries())
    if (e.stored && e.stored->value && !candidates_.count(e.stored.get()))
      candidates_[e.stored.get()] = {e.stored, 0};
  struct Group {
    uint64_t tick = 0;
    std::vector<NodeRef> nodes;
    bool pinned = false;
  };
  std::unordered_map<const Value*, Group> groups;
  for (auto it = candidates_.begin(); it != candidates_.end();) {
    NodeRef n = it->second.node.lock();
    if (!n || !n->value) {
      it = candidates_.erase(it);
      continue;
    }
    Group& g = groups[n->value.get()];
    g.tick = std::max(g.tick, it->second.tick);
    g.pinned = g.pinned || pinned_.count(n.get());
    g.nodes.push_back(std::move(n));
    ++it;
  }
  std::vector<std::pair<uint64_t, Group*>> order;  // coldest first
  for (auto& [v, g] : groups)
    if (!g.pinned) order.emplace_back(g.tick, &g);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t freed = 0;
  for (const auto& [tick, g] : order) {
    if (freed >= need) break;
    const std::vector<NodeRef>& nodes = g->nodes;
    std::shared_ptr<const Value> value = nodes[0]->value;
    // A lazy read of ours already holding this value (it was spilled and read back): no write.
    NodeRef load;
    for (const NodeRef& n : nodes)
      if (n->stored && our_loads_.count(n->stored->id)) load = n->stored;
    // Referred to by the group's nodes (and by its lazy read, once read back) and `value`
    // here: nothing else, or a reader would keep the memory anyway.
    const long refs = static_cast<long>(nodes.size()) + 1 + (load && load->value == value ? 1 : 0);
    if (value.use_count() > refs || value->v.buf.use_count() > 1) continue;
    const int64_t bytes = value->v.numel() * static_cast<int64_t>(dtype_size(value->v.dtype));
    if (!load) load = write(nodes, *value, bytes);
    for (const NodeRef& n : nodes) {
      if (!n->stored) set_stored(*n, load);
      set_value(*n, nullptr);
      candidates_.erase(n.get());
    }
    if (load->value == value) set_value(*load, nullptr);
    value.reset();
    freed += bytes;
  }
  return freed;
}

NodeRef Spill::write(const std::vector<NodeRef>& nodes, const Value& value, int64_t bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir(), ec);
  const std::string path = cat_str(dir(), "/v", nodes[0]->id, ".npy");
  const std::string what = [&] {
    for (const auto& [name, e] : s_.env().entries())
      for (const NodeRef& n : nodes)
        if (e.current() == n) return "tp.env." + name;
    return cat_str("a ", dtype_name(value.v.dtype), " ", shape_str(value.v.shape), " value");
  }();
  auto failed = [&](const std::string& why) {
    std::remove(path.c_str());
    return Error(cat_str("cannot spill ", what, " (", human_bytes(static_cast<double>(bytes)), ") to '", path,
                         "': ", why));
  };
  if (s_.config().spill_fault) throw failed("No space left on device (injected: TAPESTRY_SPILL_FAULT)");
  const std::string header = io::npy_header_bytes(value.v.dtype, value.v.shape);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw failed(std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  ok = ok && std::fwrite(value.v.byte_ptr(), 1, static_cast<size_t>(bytes), f) == static_cast<size_t>(bytes);
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) throw failed(std::strerror(ok ? errno : err));
  NodeRef lazy = io::lazy_raw(path, io::read_npy_header(path));
  our_loads_.insert(lazy->id);
  s_.placements().push_back({lazy, lazy->id, path});  // the file goes with the node
  ++spilled_nodes_;
  ++node_spills_;
  node_bytes_ += bytes;
  return lazy;
}

void Spill::note(const NodeRef& n) {
  if (!tracking_ || !n || !n->value) return;
  std::lock_guard lock(mu_);
  note_locked(n);
}

void Spill::note_locked(const NodeRef& n) {
  // The gone (freed, or their value dropped) are swept as the map grows, so it stays near the
  // live ones.
  if (candidates_.size() >= 2 * swept_at_) {
    std::erase_if(candidates_, [](const auto& kv) {
      const NodeRef x = kv.second.node.lock();
      return !x || !x->value;
    });
    swept_at_ = std::max<size_t>(64, candidates_.size());
  }
  Candidate& c = candidates_[n.get()];
  if (c.node.expired()) c.node = n;  // a new one (or a node freed and its address reused)
  c.tick = ++tick_;
}

void Spill::note_read(const NodeRef& leaf) {
  if (!leaf || leaf->value) return;
  std::lock_guard lock(mu_);
  if (our_loads_.count(leaf->id)) ++node_reads_;
}

Spill::Counts Spill::counts() const {
  std::lock_guard lock(mu_);
  const ShardStore& st = s_.shard_store();
  return {st.spills() + node_spills_, st.spill_bytes() + node_bytes_, st.readbacks() + node_reads_};
}

Spill::Pin::Pin(Spill& sp, const std::vector<NodeRef>& roots) : sp_(sp) {
  if (!sp.tracking_) return;
  // The subgraph stops at values: those are what the evaluation reads (their own inputs are
  // not, so an older state of a loop, u0 under u1 = f(u0), can still go).
  pinned_ = plan::observed_subgraph(roots);
  std::lock_guard lock(sp_.mu_);
  for (const NodeRef& n : pinned_) ++sp_.pinned_[n.get()];
}

Spill::Pin::~Pin() {
  if (pinned_.empty()) return;
  std::lock_guard lock(sp_.mu_);
  for (const NodeRef& n : pinned_) {
    // Just used: what it read, what it made, and what the evaluation kept on its nodes.
    if (n->value) sp_.note_locked(n);
    if (auto it = sp_.pinned_.find(n.get()); it != sp_.pinned_.end() && --it->second == 0)
      sp_.pinned_.erase(it);
  }
}

}  // namespace tapestry
