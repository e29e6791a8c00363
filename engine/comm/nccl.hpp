// NCCL for device buffers: a communicator bootstrapped over MPI and the collectives a plan uses.
//   NcclComm comm = NcclComm::bootstrap();            // after Mpi::start(); one rank per GPU
//   NcclTransport t(comm);
//   t.all_reduce(grad_view, Op::Sum);  t.send(1, slice);  t.recv(0, block_view);  t.synchronize();
// Built only with CUDA (engine/comm/CMakeLists via TAPESTRY_HAVE_CUDA). Unlike comm::Transport
// (host values, buffered, polled), NCCL operations are enqueued on the rank's CUDA stream in
// plan order on every rank, so send/recv are matched by order, not by tag; the executor issues
// them inside one group per step (Group) so that a ring of sends cannot deadlock.
#pragma once

#include <memory>

#include "engine/ir/op.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace tapestry::comm {

// Owns the ncclComm_t (ncclCommDestroy on destruction).
class NcclComm {
 public:
  // Rank 0 makes the unique id and broadcasts it (framed: nccl_frame.hpp) over MPI_COMM_WORLD;
  // every rank then joins with ncclCommInitRank on its device (local rank % GPUs).
  static NcclComm bootstrap();
  ~NcclComm();
  NcclComm(NcclComm&&) noexcept;
  NcclComm& operator=(NcclComm&&) = delete;
  NcclComm(const NcclComm&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  void* raw() const { return comm_; }  // the ncclComm_t

 private:
  NcclComm(void* comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  void* comm_ = nullptr;
  int rank_ = 0, size_ = 1;
};

// ncclGroupStart in the constructor, ncclGroupEnd in the destructor (also on an exception).
class NcclGroup {
 public:
  NcclGroup();
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
};

class NcclTransport {
 public:
  explicit NcclTransport(NcclComm& comm) : comm_(comm) {}
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  // Contiguous device views only (pack a slice with cuda::copy_view first).
  void send(int to, const cuda::DView& v);
  void recv(int from, const cuda::DView& v);
  // In place; op is Sum, Prod, Max or Min.
  void all_reduce(const cuda::DView& v, Op op);
  // in holds size() equal chunks; out (one chunk) gets this rank's reduced chunk.
  void reduce_scatter(const cuda::DView& in, const cuda::DView& out, Op op);
  void synchronize();
  int64_t bytes_sent() const { return bytes_; }

 private:
  NcclComm& comm_;
  int64_t bytes_ = 0;
};

}  // namespace tapestry::comm
