// The loopback transport: N virtual ranks in one process, for tests and modelled meshes.
//   comm::LoopbackHub hub(4);                       // owns the mailboxes of 4 ranks
//   hub.endpoint(0).send(2, tag, view);   auto v = hub.endpoint(2).try_recv(0, tag);
//   hub.undelivered() == 0                          // after a run: every message was received
// A send copies the slice into a fresh contiguous buffer, as a real network would, so a rank
// can never see another rank's memory through a message. Exchanges (broadcast, all-gather,
// all-to-all) meet as MPI's collectives do: the members of a group match their exchanges on it
// by the order they start them, each contribution is copied when it is started, and a member
// whose spec disagrees with another's (kind, root, counts) is an InternalError, as the same
// plan on MPI would mix up data. Thread-safe, so a driver may later
// run each virtual rank on its own thread; the executor today runs them round-robin.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "engine/comm/transport.hpp"

namespace tapestry::comm {

class LoopbackHub;

// One virtual rank's endpoint; owned by its hub.
class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(LoopbackHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void send(int to, Tag tag, const View& slice) override;
  std::shared_ptr<Value> try_recv(int from, Tag tag) override;
  int64_t messages_sent() const override { return messages_; }
  int64_t bytes_sent() const override { return bytes_; }
  bool can_exchange() const override { return true; }
  std::unique_ptr<Collective> start_exchange(const ExchangeSpec& spec, std::shared_ptr<std::vector<char>> in,
                                             std::shared_ptr<std::vector<char>> out) override;
  int64_t collectives_started() const override { return collectives_; }

 private:
  LoopbackHub& hub_;
  int rank_;
  int64_t messages_ = 0, bytes_ = 0, collectives_ = 0;
  std::map<Group, uint64_t> next_;  // per group: the exchanges this rank started on it
};

class LoopbackHub {
 public:
  explicit LoopbackHub(int ranks);
  LoopbackHub(const LoopbackHub&) = delete;
  LoopbackHub& operator=(const LoopbackHub&) = delete;

  int size() const { return static_cast<int>(endpoints_.size()); }
  Transport& endpoint(int rank);
  // Messages sent and never received, and exchanges some member never finished: a plan that
  // sends what nobody reads is a bug.
  size_t undelivered() const;
  int64_t messages_sent() const;  // over all endpoints
  int64_t bytes_sent() const;

 private:
  friend class LoopbackTransport;
  using Key = std::tuple<int, int, Tag>;  // from, to, tag
  void post(Key key, std::shared_ptr<Value> v);
  std::shared_ptr<Value> take(const Key& key);

  std::vector<std::unique_ptr<LoopbackTransport>> endpoints_;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<Value>> mailbox_;

  // One exchange on a group: what each member started it with, and who has finished it.
  struct Meeting {
    std::map<int, std::pair<ExchangeSpec, std::shared_ptr<std::vector<char>>>> started;
    std::set<int> finished;
  };
  using MeetingKey = std::pair<Group, uint64_t>;
  void start(const MeetingKey& key, int rank, const ExchangeSpec& spec,
             std::shared_ptr<std::vector<char>> in);
  // Whether `rank` received its part (into `out`); the meeting ends once every member did.
  bool finish(const MeetingKey& key, int rank, std::vector<char>* out);
  std::map<MeetingKey, Meeting> meetings_;
  friend class LoopbackExchange;
};

}  // namespace tapestry::comm
