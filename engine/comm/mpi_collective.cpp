#include "engine/comm/mpi_collective.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "engine/comm/mpi.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::comm {

namespace {

// Tags on the groups' parent communicator (its own, so they never meet the data messages).
constexpr int kTagReady = 21;   // "I am about to create this group": epoch, then the ranks
constexpr int kTagCreate = 22;  // MPI_Comm_create_group's own traffic

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  throw InternalError(cat_str(what, " failed: ", std::string(text, n)));
}

// Max and min as the kernels do them (kernels/monoid.hpp): a NaN wins. MPI_MAX / MPI_MIN
// compare with < and would drop it depending on the order of the operands.
template <Monoid M, class T> void merge(const void* in, void* inout, int n) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < n; ++i) b[i] = fn::combine<M>(a[i], b[i]);
}

void nan_max(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == MPI_FLOAT) merge<Monoid::Max, float>(in, inout, *len);
  else merge<Monoid::Max, double>(in, inout, *len);
}

void nan_min(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == MPI_FLOAT) merge<Monoid::Min, float>(in, inout, *len);
  else merge<Monoid::Min, double>(in, inout, *len);
}

struct Mapped {
  MPI_Datatype type;
  MPI_Op op;
};

// How a merge maps onto MPI, or nullopt where it has no equivalent (the executor then merges
// point to point). `fmax`, `fmin`: the NaN-propagating ops for floats above.
std::optional<Mapped> mapping(Monoid op, DType t, MPI_Op fmax, MPI_Op fmin) {
  switch (t) {
    case DType::Bool:
      // A bool is one byte holding 0 or 1, as C's _Bool (MPI_C_BOOL); the kernels' sum of
      // bools is `or` and their product `and`, which are MPI's logical ops on it.
      static_assert(sizeof(bool) == 1);
      switch (op) {
        case Monoid::And:
        case Monoid::Min:
        case Monoid::Prod: return Mapped{MPI_C_BOOL, MPI_LAND};
        case Monoid::Or:
        case Monoid::Max:
        case Monoid::Sum: return Mapped{MPI_C_BOOL, MPI_LOR};
      }
      break;
    case DType::I32:
    case DType::I64: {
      const bool wide = t == DType::I64;
      // Sums and products over the unsigned type: they wrap on overflow exactly as the kernels'
      // (which also add unsigned), with no signed-overflow undefined behaviour inside MPI.
      const MPI_Datatype u = wide ? MPI_UINT64_T : MPI_UINT32_T, s = wide ? MPI_INT64_T : MPI_INT32_T;
      switch (op) {
        case Monoid::Sum: return Mapped{u, MPI_SUM};
        case Monoid::Prod: return Mapped{u, MPI_PROD};
        case Monoid::Max: return Mapped{s, MPI_MAX};
        case Monoid::Min: return Mapped{s, MPI_MIN};
        case Monoid::And: return Mapped{s, MPI_LAND};
        case Monoid::Or: return Mapped{s, MPI_LOR};
      }
      break;
    }
    case DType::F32:
    case DType::F64: {
      const MPI_Datatype f = t == DType::F32 ? MPI_FLOAT : MPI_DOUBLE;
      switch (op) {
        case Monoid::Sum: return Mapped{f, MPI_SUM};
        case Monoid::Prod: return Mapped{f, MPI_PROD};
        case Monoid::Max: return Mapped{f, fmax};
        case Monoid::Min: return Mapped{f, fmin};
        // MPI defines its logical ops on integer types only.
        case Monoid::And:
        case Monoid::Or: return std::nullopt;
      }
      break;
    }
    default: break;  // i8, u8, c64, c128 (f16 and bf16 never combine): merged point to point
  }
  return std::nullopt;
}

}  // namespace

struct MpiGroups::Impl {
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Op fmax = MPI_OP_NULL, fmin = MPI_OP_NULL;
  int rank = 0;
  std::map<Group, MPI_Comm> comms;
  std::vector<MPI_Comm> retired;
  int64_t created = 0;
  // Collectives dropped before they completed: MPI may still read `in` and write `out`.
  struct Buried {
    MPI_Request req;
    View in, out;
    std::shared_ptr<void> keep;  // an exchange's buffers and counts
  };
  std::vector<Buried> graveyard;
  struct Note {
    MPI_Request req;
    std::shared_ptr<const std::vector<uint64_t>> body;
  };
  std::vector<Note> notes;  // ready notes still being sent

  // Forgets what MPI has finished with.
  void reap() {
    std::erase_if(graveyard, [](Buried& b) {
      int done = 0;
      MPI_Test(&b.req, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    std::erase_if(notes, [](Note& n) {
      int done = 0;
      MPI_Test(&n.req, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
  }
};

// A started MPI_Ireduce / MPI_Iallreduce. Dropped unfinished (a failed run), its request and
// buffers go to the graveyard: MPI forbids freeing or cancelling a collective's request.
class MpiCollective final : public Collective {
 public:
  MpiCollective(MpiGroups::Impl& owner, MPI_Request req, View in, View out, std::shared_ptr<void> keep = {})
      : owner_(owner), req_(req), in_(std::move(in)), out_(std::move(out)), keep_(std::move(keep)) {}
  ~MpiCollective() override {
    if (!done_) owner_.graveyard.push_back({req_, std::move(in_), std::move(out_), std::move(keep_)});
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), "MPI_Test (collective)");
    done_ = flag != 0;
    return done_;
  }

 private:
  MpiGroups::Impl& owner_;
  MPI_Request req_;
  View in_, out_;
  std::shared_ptr<void> keep_;
  bool done_ = false;
};

MpiGroups::MpiGroups() : impl_(std::make_unique<Impl>()) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->parent), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(impl_->parent, MPI_ERRORS_RETURN);
  MPI_Comm_rank(impl_->parent, &impl_->rank);
  check(MPI_Op_create(&nan_max, 1, &impl_->fmax), "MPI_Op_create");
  check(MPI_Op_create(&nan_min, 1, &impl_->fmin), "MPI_Op_create");
}

MpiGroups::~MpiGroups() {
  Impl& m = *impl_;
  m.reap();
  for (Impl::Note& n : m.notes) MPI_Request_free(&n.req);
  if (!m.graveyard.empty()) {
    // Collectives of a failed run that never completed. MPI_Finalize still progresses them
    // (Open MPI's libnbc posts their next receives), so their communicators, ops and buffers
    // must outlive it: freeing a communicator under one crashed MPI_Finalize. Kept on purpose
    // (reachable from this static, so leak checkers do not flag it); the process is ending.
    static auto* kept = new std::vector<Impl::Buried>();
    for (Impl::Buried& b : m.graveyard) kept->push_back(std::move(b));
    return;
  }
  for (auto& [group, comm] : m.comms) MPI_Comm_free(&comm);
  for (MPI_Comm& comm : m.retired) MPI_Comm_free(&comm);
  MPI_Op_free(&m.fmax);
  MPI_Op_free(&m.fmin);
  MPI_Comm_free(&m.parent);
}

bool MpiGroups::supports(Monoid op, DType dtype) {
  return mapping(op, dtype, MPI_OP_NULL, MPI_OP_NULL).has_value();
}

void MpiGroups::join(const std::vector<Group>& groups, uint64_t epoch,
                     const std::function<void()>& check_peers) {
  Impl& m = *impl_;
  m.reap();
  for (const Group& group : groups) {
    if (!std::binary_search(group.begin(), group.end(), m.rank) || m.comms.count(group)) continue;
    internal_check(group.size() >= 2 && std::is_sorted(group.begin(), group.end()));
    auto note = std::make_shared<std::vector<uint64_t>>();
    note->push_back(epoch);
    for (int r : group) note->push_back(static_cast<uint64_t>(r));
    const int words = static_cast<int>(note->size());
    for (int r : group) {
      if (r == m.rank) continue;
      MPI_Request req;
      check(MPI_Isend(note->data(), words, MPI_UINT64_T, r, kTagReady, m.parent, &req), "MPI_Isend");
      m.notes.push_back({req, note});
    }
    // Every other member's note: they all reach this group next (they follow the same list,
    // and each earlier group completes by the same argument), so none waits on another.
    std::vector<bool> heard(group.size(), false);
    size_t left = group.size() - 1;
    Backoff wait;
    while (left > 0) {
      bool got = false;
      for (size_t i = 0; i < group.size(); ++i) {
        if (group[i] == m.rank || heard[i]) continue;
        int flag = 0;
        MPI_Status st;
        check(MPI_Iprobe(group[i], kTagReady, m.parent, &flag, &st), "MPI_Iprobe");
        if (!flag) continue;
        int count = 0;
        MPI_Get_count(&st, MPI_UINT64_T, &count);
        std::vector<uint64_t> in(static_cast<size_t>(std::max(count, 0)));
        check(MPI_Recv(in.data(), count, MPI_UINT64_T, group[i], kTagReady, m.parent, MPI_STATUS_IGNORE),
              "MPI_Recv");
        if (!in.empty() && in[0] < epoch) continue;  // from a run that gave up joining (the job broke)
        if (in != *note)
          throw InternalError(cat_str("rank ", m.rank, " joins a group of ", group.size(), " ranks in run ",
                                      epoch, ", rank ", group[i], " another (", in.size() - 1, " ranks, run ",
                                      in.empty() ? 0 : in[0], ")"));
        heard[i] = true;
        --left;
        got = true;
      }
      if (left == 0) break;
      if (got) {
        wait.reset();
        continue;
      }
      if (check_peers) check_peers();
      m.reap();
      wait.pause();
    }
    MPI_Group all, sub;
    MPI_Comm_group(m.parent, &all);
    MPI_Group_incl(all, static_cast<int>(group.size()), group.data(), &sub);
    MPI_Comm comm = MPI_COMM_NULL;
    const int rc = MPI_Comm_create_group(m.parent, sub, kTagCreate, &comm);
    MPI_Group_free(&sub);
    MPI_Group_free(&all);
    check(rc, "MPI_Comm_create_group");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    m.comms.emplace(group, comm);
    ++m.created;
  }
}

std::unique_ptr<Collective> MpiGroups::start_reduce(const ReduceSpec& spec, const View& in, const View& out) {
  Impl& m = *impl_;
  const auto it = m.comms.find(spec.group);
  internal_check(it != m.comms.end());  // join_groups first
  const std::optional<Mapped> mp = mapping(spec.op, in.dtype, m.fmax, m.fmin);
  internal_check(mp.has_value());
  internal_check(in.buf && in.is_contiguous() && in.numel() > 0 && in.numel() <= kMaxCollectiveElements);
  if (!spec.counts.empty()) {  // a reduce-scatter: this member's run of the merge
    internal_check(spec.counts.size() == spec.group.size());
    std::vector<int> counts;
    int64_t total = 0;
    for (int64_t n : spec.counts) counts.push_back(static_cast<int>(n)), total += n;
    const auto me = std::lower_bound(spec.group.begin(), spec.group.end(), m.rank);
    internal_check(total == in.numel() && me != spec.group.end() && *me == m.rank);
    const int64_t mine = spec.counts[static_cast<size_t>(me - spec.group.begin())];
    internal_check(out.buf && out.is_contiguous() && out.numel() == mine && out.dtype == in.dtype);
    MPI_Request req;
    check(
        MPI_Ireduce_scatter(in.byte_ptr(), out.byte_ptr(), counts.data(), mp->type, mp->op, it->second, &req),
        "MPI_Ireduce_scatter");
    return std::make_unique<MpiCollective>(m, req, in, out);
  }
  const int count = static_cast<int>(in.numel());
  const bool receives = spec.root == kAllMembers || spec.root == m.rank;
  if (receives)
    internal_check(out.buf && out.is_contiguous() && out.numel() == in.numel() && out.dtype == in.dtype);
  MPI_Request req;
  if (spec.root == kAllMembers) {
    check(MPI_Iallreduce(in.byte_ptr(), out.byte_ptr(), count, mp->type, mp->op, it->second, &req),
          "MPI_Iallreduce");
  } else {
    const auto at = std::lower_bound(spec.group.begin(), spec.group.end(), spec.root);
    internal_check(at != spec.group.end() && *at == spec.root);
    const int root = static_cast<int>(at - spec.group.begin());  // ranks in the group are in its order
    check(MPI_Ireduce(in.byte_ptr(), receives ? out.byte_ptr() : nullptr, count, mp->type, mp->op, root,
                      it->second, &req),
          "MPI_Ireduce");
  }
  return std::make_unique<MpiCollective>(m, req, in, receives ? out : View{});
}

namespace {

// What an exchange's MPI call reads until it completes.
struct ExchangeBuffers {
  std::shared_ptr<std::vector<char>> in, out;
  std::vector<int> counts, displs, recv, rdispls;
};

std::vector<int> ints(const std::vector<int64_t>& v) {
  std::vector<int> out;
  for (int64_t x : v) {
    internal_check(x >= 0 && x <= std::numeric_limits<int>::max());
    out.push_back(static_cast<int>(x));
  }
  return out;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  int64_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    internal_check(at <= std::numeric_limits<int>::max());
    d[i] = static_cast<int>(at);
    at += counts[i];
  }
  return d;
}

}  // namespace

std::unique_ptr<Collective> MpiGroups::start_exchange(const ExchangeSpec& spec,
                                                      std::shared_ptr<std::vector<char>> in,
                                                      std::shared_ptr<std::vector<char>> out) {
  Impl& m = *impl_;
  const auto it = m.comms.find(spec.group);
  internal_check(it != m.comms.end());  // join_groups first
  auto b = std::make_shared<ExchangeBuffers>();
  b->in = in ? std::move(in) : std::make_shared<std::vector<char>>();
  b->out = out ? std::move(out) : std::make_shared<std::vector<char>>();
  // MPI wants a valid address even for an empty buffer.
  if (b->in->empty()) b->in->resize(1);
  if (b->out->empty()) b->out->resize(1);
  MPI_Request req;
  const int me = spec.member(m.rank);
  switch (spec.kind) {
    case ExchangeKind::Broadcast: {
      b->counts = ints(spec.counts);
      internal_check(b->counts.size() == 1);
      const int root = spec.member(spec.root);
      char* buf = m.rank == spec.root ? b->in->data() : b->out->data();
      internal_check(m.rank == spec.root ? b->in->size() >= size_t(b->counts[0])
                                         : b->out->size() >= size_t(b->counts[0]));
      check(MPI_Ibcast(buf, b->counts[0], MPI_BYTE, root, it->second, &req), "MPI_Ibcast");
      break;
    }
    case ExchangeKind::AllGather: {
      b->counts = ints(spec.counts);
      b->displs = displacements(b->counts);
      internal_check(b->counts.size() == spec.group.size());
      internal_check(static_cast<int64_t>(b->out->size()) >= spec.received(m.rank) + b->counts[me]);
      check(MPI_Iallgatherv(b->in->data(), b->counts[me], MPI_BYTE, b->out->data(), b->counts.data(),
                            b->displs.data(), MPI_BYTE, it->second, &req),
            "MPI_Iallgatherv");
      break;
    }
    case ExchangeKind::AllToAll: {
      b->counts = ints(spec.counts);
      b->recv = ints(spec.recv);
      b->displs = displacements(b->counts);
      b->rdispls = displacements(b->recv);
      internal_check(b->counts.size() == spec.group.size() && b->recv.size() == spec.group.size());
      check(MPI_Ialltoallv(b->in->data(), b->counts.data(), b->displs.data(), MPI_BYTE, b->out->data(),
                           b->recv.data(), b->rdispls.data(), MPI_BYTE, it->second, &req),
            "MPI_Ialltoallv");
      break;
    }
  }
  return std::make_unique<MpiCollective>(m, req, View{}, View{}, std::move(b));
}

void MpiGroups::retire_all() {
  Impl& m = *impl_;
  for (auto& [group, comm] : m.comms) m.retired.push_back(comm);
  m.comms.clear();
  m.reap();
}

int64_t MpiGroups::created() const { return impl_->created; }
int64_t MpiGroups::retired() const { return static_cast<int64_t>(impl_->retired.size()); }

}  // namespace tapestry::comm
