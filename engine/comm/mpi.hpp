// MPI for the engine: the process's MPI session, its messages, and the transport over it.
//   comm::Mpi* mpi = comm::Mpi::start(config.mpi_launched);   // MPI_Init under mpirun; else nullptr
//   comm::MpiTransport t(*mpi, epoch);        // one plan run: t.send(1, tag, view); t.try_recv(0, tag)
//                                             //   and collectives: t.start_reduce(spec, in, out)
//   comm::Mpi::finish(false);                 // MPI_Finalize once, at exit
// MPI is started only when mpirun launched this process (OMPI_COMM_WORLD_SIZE, PMI_SIZE),
// so a plain `tapestry` never pays for MPI_Init nor depends on a working launcher.
//
// Why our own mailbox instead of MPI tags: a transport tag is 64 bits (kind, plan indices)
// and MPI tags are ints, so every slice travels under one MPI tag with a header naming its
// tag and the run (epoch) it belongs to. Receivers drain what has arrived into a map keyed
// by (from, epoch, tag); a message left over from an aborted run has an older epoch and is
// dropped instead of being mistaken for the same-named slice of the next run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/comm/mpi_collective.hpp"
#include "engine/comm/transport.hpp"

namespace tapestry::comm {

// MPI tags of the messages Tapestry sends on its communicator.
enum MpiTag : int {
  kTagCommand = 11,  // rank 0 -> worker: run a plan, abort a run, shut down
  kTagStatus = 12,   // worker -> rank 0: how a run ended
  kTagData = 13,     // a slice (transfer, partial, output), header + payload
  kTagDataBig = 14,  // the same, over 2 GiB: counted in 1 MiB chunks (MPI counts are ints)
};

class Mpi {
 public:
  // Initializes MPI once when an MPI launcher started this process (`launched`: the
  // session's Config saw its variables; else returns nullptr); later calls return the same
  // session. Throws Error when MPI_Init fails.
  static Mpi* start(bool launched);
  static Mpi* get();  // the started session, or nullptr
  // MPI_Finalize (or MPI_Abort when `abort`: a peer no longer answers, so finalizing could
  // wait on it forever). Idempotent; the session is gone afterwards.
  static void finish(bool abort);

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sends bytes without waiting: the buffer is kept until MPI has sent it.
  void post(int to, int tag, std::shared_ptr<const std::vector<char>> bytes);
  // The next message with `tag` from `from`, if one has arrived; never blocks.
  std::optional<std::vector<char>> poll(int from, int tag);
  // Completes the sends MPI has finished with; whether none is left.
  bool progress();
  // Waits up to `timeout_s` for every pending send; whether all completed.
  bool flush(double timeout_s);

  // Slices: sends one (copied into a message at once), and receives every data message that
  // has arrived into the mailbox. Messages of runs before `epoch` are dropped.
  void send_slice(int to, uint64_t epoch, Tag tag, const View& slice);
  void drain(uint64_t epoch);
  std::shared_ptr<Value> take(int from, uint64_t epoch, Tag tag);
  size_t mailbox_size() const;

  // The communicators of groups of ranks and the collectives on them (mpi_collective.hpp).
  MpiGroups& groups() { return *groups_; }

  ~Mpi();
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;

 private:
  Mpi();
  struct Impl;  // MPI handles stay out of this header (mpi.h is slow and leaks macros)
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<MpiGroups> groups_;  // after impl_: freed first, before MPI goes away
  int rank_ = 0, size_ = 1;
};

// One plan run's endpoint over MPI. Every message carries `epoch`, so runs never mix.
class MpiTransport final : public Transport {
 public:
  MpiTransport(Mpi& mpi, uint64_t epoch);
  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  void send(int to, Tag tag, const View& slice) override;
  std::shared_ptr<Value> try_recv(int from, Tag tag) override;
  int64_t messages_sent() const override { return messages_; }
  int64_t bytes_sent() const override { return bytes_; }
  void push_sends(double max_s) override;

  // Regular combines run as MPI collectives on communicators of their participants.
  bool can_reduce(Monoid op, DType dtype) const override;
  void join_groups(const std::vector<Group>& groups) override;
  std::unique_ptr<Collective> start_reduce(const ReduceSpec& spec, const View& in, const View& out) override;
  int64_t collectives_started() const override { return collectives_; }
  bool can_reduce_scatter() const override { return use_collectives_; }
  // Exchanges as MPI_Ibcast / MPI_Iallgatherv / MPI_Ialltoallv on the same communicators.
  bool can_exchange() const override { return use_collectives_; }
  std::unique_ptr<Collective> start_exchange(const ExchangeSpec& spec, std::shared_ptr<std::vector<char>> in,
                                             std::shared_ptr<std::vector<char>> out) override;

  // Called while join_groups waits for a group's members; rank 0 throws from it when a
  // member died, so a lost worker is reported instead of waited on.
  void set_join_check(std::function<void()> check) { join_check_ = std::move(check); }
  // Off: every combine goes point to point, as over loopback (tests compare the two). Set
  // alike on every rank before the plan starts.
  void use_collectives(bool on) { use_collectives_ = on; }

 private:
  Mpi& mpi_;
  uint64_t epoch_;
  int64_t messages_ = 0, bytes_ = 0, collectives_ = 0;
  bool use_collectives_ = true;
  std::function<void()> join_check_;
};

// Waiting without burning the core another rank needs: yields for `spin` (at least 32
// times), then sleeps with a doubling pause up to `max`. reset() after any progress.
// The yielding window is for waits that usually end soon: a worker between the runs of a loop
// (rank 0 sends the next one a few ms later) and a rank waiting on a halo. Asleep there, a rank
// would start late by up to `max` every step, and the others then wait for its slices (W8).
class Backoff {
 public:
  explicit Backoff(std::chrono::microseconds max = std::chrono::microseconds(1000),
                   std::chrono::microseconds spin = std::chrono::microseconds(0))
      : max_(max), spin_(spin) {}
  void reset() { spins_ = 0, sleep_ = std::chrono::microseconds(0); }
  void pause();

 private:
  std::chrono::microseconds max_, spin_;
  int spins_ = 0;
  std::chrono::steady_clock::time_point since_;  // the first pause since reset()
  std::chrono::microseconds sleep_{0};
};

// What relaunching needs from the process environment (engine/session/config.hpp reads it).
struct LaunchEnv {
  std::string path = "/usr/bin:/bin";  // PATH, searched for mpirun (this when unset)
  bool relaunched = false;             // TAPESTRY_RELAUNCHED: this process is the relaunch
  bool sigkill_timeout_set = false;    // OMPI_MCA_odls_base_sigkill_timeout is given
};

// The command that runs this executable with `args...` on `ranks` ranks:
// `mpirun -n ranks <this executable> args...` (Open MPI gets --oversubscribe, and
// --allow-run-as-root when run as root). Empty, with the reason in `why`, when it cannot.
std::vector<std::string> mpirun_command(int ranks, int argc, char** argv, const LaunchEnv& env,
                                        std::string& why);

}  // namespace tapestry::comm
