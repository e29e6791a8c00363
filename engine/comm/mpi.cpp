#include "engine/comm/mpi.hpp"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::comm {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  throw InternalError(cat_str(what, " failed: ", std::string(text, n)));
}

// Our own communicator, so no library that shares MPI_COMM_WORLD can match our messages,
// and so errors come back as codes (MPI_ERRORS_RETURN) rather than aborting the job.
class Communicator {
 public:
  Communicator() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~Communicator() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

constexpr int kChunk = 1 << 20;  // the unit of counts for messages over 2 GiB

// A committed datatype of kChunk bytes, freed with the session.
class ChunkType {
 public:
  ChunkType() {
    check(MPI_Type_contiguous(kChunk, MPI_BYTE, &type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~ChunkType() { MPI_Type_free(&type_); }
  ChunkType(const ChunkType&) = delete;
  ChunkType& operator=(const ChunkType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// A data message: this header, the extents, zero padding to 64 bytes, then the elements
// contiguous. The padding keeps the payload as aligned as any Buffer, so a received
// message is used in place: its Value is a view into the receive buffer.
struct DataHeader {
  uint32_t magic;
  uint32_t dims;
  uint64_t epoch;
  uint64_t tag;
  uint8_t dtype;
  uint8_t pad[7];
};
static_assert(sizeof(DataHeader) == 32);
constexpr uint32_t kDataMagic = 0x4d445054;  // "TPDM"
constexpr uint32_t kMaxDims = 64;

size_t header_bytes(size_t dims) { return (sizeof(DataHeader) + 8 * dims + 63) / 64 * 64; }

std::unique_ptr<Mpi>& session() {
  static std::unique_ptr<Mpi> s;
  return s;
}

}  // namespace

struct Mpi::Impl {
  Communicator comm;
  ChunkType chunk;
  struct Pending {
    MPI_Request req;
    std::shared_ptr<const void> keep;  // the buffer MPI reads until the send completes
  };
  std::vector<Pending> pending;
  using Key = std::tuple<int, uint64_t, Tag>;  // from, epoch, tag
  std::map<Key, std::shared_ptr<Value>> mailbox;
  uint64_t epoch = 0;  // the newest run seen: older messages are stale

  void isend(const void* data, int count, MPI_Datatype type, int to, int tag,
             std::shared_ptr<const void> keep) {
    MPI_Request req;
    check(MPI_Isend(data, count, type, to, tag, comm.get(), &req), "MPI_Isend");
    pending.push_back({req, std::move(keep)});
  }

  ~Impl() {
    // Sends a peer never matched (it left or aborted): freeing lets MPI drop them.
    for (Pending& p : pending) MPI_Request_free(&p.req);
  }
};

Mpi::Mpi() : impl_(std::make_unique<Impl>()), groups_(std::make_unique<MpiGroups>()) {
  MPI_Comm_rank(impl_->comm.get(), &rank_);
  MPI_Comm_size(impl_->comm.get(), &size_);
}

Mpi::~Mpi() = default;

Mpi* Mpi::start(bool launched) {
  if (session()) return session().get();
  if (!launched) return nullptr;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    // Only the main thread calls MPI; kernel threads never do.
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Error("MPI_Init failed: cannot join the MPI job");
  }
  session().reset(new Mpi());
  return session().get();
}

Mpi* Mpi::get() { return session().get(); }

void Mpi::finish(bool abort) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized) return;
  if (abort) MPI_Abort(MPI_COMM_WORLD, 1);
  session().reset();  // frees the communicator and datatype before MPI goes away
  MPI_Finalize();
}

void Mpi::post(int to, int tag, std::shared_ptr<const std::vector<char>> bytes) {
  internal_check(to >= 0 && to < size_ && to != rank_ && bytes->size() <= INT_MAX);
  const auto* data = bytes->data();
  const int count = static_cast<int>(bytes->size());
  impl_->isend(data, count, MPI_BYTE, to, tag, std::move(bytes));
}

std::optional<std::vector<char>> Mpi::poll(int from, int tag) {
  int flag = 0;
  MPI_Status st;
  check(MPI_Iprobe(from, tag, impl_->comm.get(), &flag, &st), "MPI_Iprobe");
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  std::vector<char> bytes(count > 0 ? count : 0);
  check(MPI_Recv(bytes.data(), count, MPI_BYTE, st.MPI_SOURCE, tag, impl_->comm.get(), MPI_STATUS_IGNORE),
        "MPI_Recv");
  return bytes;
}

bool Mpi::progress() {
  auto& pending = impl_->pending;
  for (size_t i = 0; i < pending.size();) {
    int done = 0;
    check(MPI_Test(&pending[i].req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      pending[i] = std::move(pending.back());
      pending.pop_back();
    } else {
      ++i;
    }
  }
  return pending.empty();
}

bool Mpi::flush(double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  Backoff wait;
  while (!progress()) {
    if (std::chrono::steady_clock::now() > end) return false;
    drain(impl_->epoch);  // a peer may be waiting for us to match its message first
    wait.pause();
  }
  return true;
}

void Mpi::send_slice(int to, uint64_t epoch, Tag tag, const View& slice) {
  internal_check(to >= 0 && to < size_ && to != rank_);
  const size_t dims = slice.shape.size();
  internal_check(dims <= kMaxDims);
  const size_t dsize = static_cast<size_t>(dtype_size(slice.dtype));
  const size_t head = header_bytes(dims);
  const size_t total = head + static_cast<size_t>(slice.numel()) * dsize;
  const bool big = total > static_cast<size_t>(INT_MAX);
  const size_t padded = big ? (total + kChunk - 1) / kChunk * kChunk : total;
  auto buf = std::make_shared<Buffer>(padded);
  char* p = static_cast<char*>(buf->data());
  std::memset(p, 0, head);
  DataHeader h{kDataMagic, static_cast<uint32_t>(dims), epoch, tag, static_cast<uint8_t>(slice.dtype), {}};
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + sizeof h, slice.shape.data(), 8 * dims);
  if (slice.numel() > 0) {
    View dst{buf, slice.dtype, slice.shape, contiguous_strides(slice.shape),
             static_cast<int64_t>(head / dsize)};
    cpu::copy_view(slice, dst);
  }
  if (big) impl_->isend(p, static_cast<int>(padded / kChunk), impl_->chunk.get(), to, kTagDataBig, buf);
  else impl_->isend(p, static_cast<int>(total), MPI_BYTE, to, kTagData, buf);
}

void Mpi::drain(uint64_t epoch) {
  if (epoch > impl_->epoch) {
    impl_->epoch = epoch;
    for (auto it = impl_->mailbox.begin(); it != impl_->mailbox.end();)
      it = std::get<1>(it->first) < epoch ? impl_->mailbox.erase(it) : std::next(it);
  }
  for (int tag : {kTagData, kTagDataBig}) {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      check(MPI_Iprobe(MPI_ANY_SOURCE, tag, impl_->comm.get(), &flag, &st), "MPI_Iprobe");
      if (!flag) break;
      const MPI_Datatype type = tag == kTagData ? MPI_BYTE : impl_->chunk.get();
      int count = 0;
      MPI_Get_count(&st, type, &count);
      const size_t bytes = static_cast<size_t>(count) * (tag == kTagData ? 1 : kChunk);
      auto buf = std::make_shared<Buffer>(bytes > 0 ? bytes : 1);
      check(MPI_Recv(buf->data(), count, type, st.MPI_SOURCE, tag, impl_->comm.get(), MPI_STATUS_IGNORE),
            "MPI_Recv");
      // Checked like any message from outside: a bad one is a clear error, not a crash.
      const char* p = static_cast<const char*>(buf->data());
      DataHeader h;
      if (bytes >= sizeof h) std::memcpy(&h, p, sizeof h);
      const bool ok = bytes >= sizeof h && h.magic == kDataMagic && h.dims <= kMaxDims &&
                      h.dtype < kNumDTypes && header_bytes(h.dims) <= bytes;
      if (!ok)
        throw InternalError(
            cat_str("rank ", rank_, " got a malformed data message from rank ", st.MPI_SOURCE));
      Shape shape(h.dims);
      std::memcpy(shape.data(), p + sizeof h, 8 * h.dims);
      const auto dtype = static_cast<DType>(h.dtype);
      const size_t head = header_bytes(h.dims);
      bool sane = true;
      for (int64_t e : shape) sane = sane && e >= 0;
      if (!sane || static_cast<size_t>(numel(shape)) * dtype_size(dtype) > bytes - head)
        throw InternalError(cat_str("rank ", rank_, " got a data message from rank ", st.MPI_SOURCE,
                                    " shorter than its shape ", shape_str(shape)));
      if (h.epoch < impl_->epoch) continue;  // left over from an aborted run
      auto v = std::make_shared<Value>();
      v->v =
          View{buf, dtype, shape, contiguous_strides(shape), static_cast<int64_t>(head / dtype_size(dtype))};
      if (!impl_->mailbox.emplace(Impl::Key{st.MPI_SOURCE, h.epoch, h.tag}, std::move(v)).second)
        throw InternalError(cat_str("rank ", rank_, " got two messages from rank ", st.MPI_SOURCE,
                                    " under one tag in run ", h.epoch));
    }
  }
}

std::shared_ptr<Value> Mpi::take(int from, uint64_t epoch, Tag tag) {
  auto it = impl_->mailbox.find({from, epoch, tag});
  if (it == impl_->mailbox.end()) return nullptr;
  auto v = std::move(it->second);
  impl_->mailbox.erase(it);
  return v;
}

size_t Mpi::mailbox_size() const { return impl_->mailbox.size(); }

MpiTransport::MpiTransport(Mpi& mpi, uint64_t epoch) : mpi_(mpi), epoch_(epoch) { mpi_.drain(epoch_); }

void MpiTransport::send(int to, Tag tag, const View& slice) {
  mpi_.send_slice(to, epoch_, tag, slice);
  bytes_ += slice.numel() * static_cast<int64_t>(dtype_size(slice.dtype));
  ++messages_;
}

void MpiTransport::push_sends(double max_s) {
  // Spin, not sleep: the receiver is usually at its matching receive already.
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_s);
  while (!mpi_.progress() && std::chrono::steady_clock::now() < end) mpi_.drain(epoch_);
}

std::shared_ptr<Value> MpiTransport::try_recv(int from, Tag tag) {
  internal_check(from >= 0 && from < size() && from != rank());
  if (auto v = mpi_.take(from, epoch_, tag)) return v;
  mpi_.progress();
  mpi_.drain(epoch_);
  return mpi_.take(from, epoch_, tag);
}

bool MpiTransport::can_reduce(Monoid op, DType dtype) const {
  return use_collectives_ && MpiGroups::supports(op, dtype);
}

void MpiTransport::join_groups(const std::vector<Group>& groups) {
  if (!groups.empty()) mpi_.groups().join(groups, epoch_, join_check_);
}

std::unique_ptr<Collective> MpiTransport::start_reduce(const ReduceSpec& spec, const View& in,
                                                       const View& out) {
  auto c = mpi_.groups().start_reduce(spec, in, out);
  ++collectives_;
  // What this rank puts into the merge; the root of a reduce only receives.
  if (spec.root != rank() || !spec.counts.empty()) {
    ++messages_;
    bytes_ += in.numel() * static_cast<int64_t>(dtype_size(in.dtype));
  }
  return c;
}

std::unique_ptr<Collective> MpiTransport::start_exchange(const ExchangeSpec& spec,
                                                         std::shared_ptr<std::vector<char>> in,
                                                         std::shared_ptr<std::vector<char>> out) {
  auto c = mpi_.groups().start_exchange(spec, std::move(in), std::move(out));
  ++collectives_;
  if (spec.sent(rank()) > 0) ++messages_, bytes_ += spec.sent(rank());
  return c;
}

void Backoff::pause() {
  if (spins_ == 0) since_ = std::chrono::steady_clock::now();
  if (++spins_ <= 32 || std::chrono::steady_clock::now() - since_ < spin_) {
    sched_yield();
    return;
  }
  sleep_ = std::max(std::chrono::microseconds(10), std::min(sleep_ * 2, max_));
  std::this_thread::sleep_for(sleep_);
}

namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string find_launcher(const std::string& dirs) {
#ifdef TAPESTRY_MPIEXEC
  if (executable(TAPESTRY_MPIEXEC)) return TAPESTRY_MPIEXEC;
#endif
  for (const char* name : {"mpirun", "mpiexec"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      const std::string cand = dirs.substr(start, end - start) + "/" + name;
      if (executable(cand)) return cand;
      start = end + 1;
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> mpirun_command(int ranks, int argc, char** argv, const LaunchEnv& env,
                                        std::string& why) {
  // A launcher that starts us without the variables we recognize would loop forever.
  if (env.relaunched) {
    why = "the MPI launcher started tapestry without an MPI environment (OMPI_COMM_WORLD_SIZE unset)";
    return {};
  }
  const std::string launcher = find_launcher(env.path);
  if (launcher.empty()) {
    why = "-n needs mpirun (Open MPI), found neither mpirun nor mpiexec on PATH";
    return {};
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    why = "cannot find this executable (/proc/self/exe)";
    return {};
  }
  self[n] = '\0';
  std::vector<std::string> args = {launcher, "-n", std::to_string(ranks)};
#ifdef OPEN_MPI
  args.push_back("--oversubscribe");  // more ranks than cores is fine on one machine
  // Pinned ranks cannot leave a core another process is busy on: measured 2x slower for a
  // 2-rank stencil on a 2-core machine (docs/performance.md, Scaling). Let the OS place them.
  args.insert(args.end(), {"--bind-to", "none"});
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  // On SIGINT/SIGTERM mpirun forwards the signal and SIGKILLs the ranks 1 s later; rank 0's
  // orderly stop (cancel the evaluation, tell the clients, remove the token) can need longer.
  if (!env.sigkill_timeout_set) args.insert(args.end(), {"--mca", "odls_base_sigkill_timeout", "10"});
#endif
  args.push_back(self);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return args;
}

}  // namespace tapestry::comm
